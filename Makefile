# `make install` sets up and builds; `make test` runs every check and every test
# (and sets up whatever is missing first, so it also works on a fresh clone).
# The inner loop: `make check` (lint, types, workflows) and `make unit`.
SHELL := /bin/bash
# The newest CPython on the machine (3.13 where pyenv has it): the nearest to
# Sublime Text's 3.14 plugin host. mypy still checks against 3.14 (pyproject.toml).
# The probe's answer is remembered in .cache, so a call of make does not probe again.
CACHE := .cache
PYTHON ?= $(shell tools/newest-python --remember $(CACHE)/newest-python)
PYTHON_VERSION := $(shell $(PYTHON) -I -S -c 'import sys; print("%d.%d" % sys.version_info[:2])')
VENV := .venv
# Named by version: a venv of another Python is made again from scratch.
VENV_STAMP := $(VENV)/.stamp-$(PYTHON_VERSION)
PY := $(VENV)/bin/python
WHEELS := $(CACHE)/wheels
CLI_CACHE := $(CACHE)/qwen-cli
GEMINI_CACHE := $(CACHE)/gemini-cli
BENCH_PEER := $(CACHE)/bench-peer
DIST := dist
BUILT := $(DIST)/QwenCompanion/.no-sublime-package
PACKAGE_SOURCES := $(shell find QwenCompanion.sublime-package-src -type f -not -path '*/__pycache__/*') \
	Default.sublime-commands Main.sublime-menu tools/build.py

# The tests run in parallel pytest workers (pytest-xdist): most of their time
# is spent waiting on processes, sockets and timers, not on the CPU. Every test
# has its own temporary HOME, folders, ports and simulated editor, and each
# worker is a process of its own, so they share nothing that one could break
# for another. worksteal: a worker that runs out takes tests from a busy one,
# as a few tests run far longer than the rest. Two, one per core of the
# 2-core machines it runs on: four finished sooner on a loaded machine, but
# there tests timed out waiting for the package's threads to start.
TEST_WORKERS ?= 2
# Passed to every pytest run below, e.g. PYTEST_ARGS='-x -k chat' or another
# test order; TEST_WORKERS=0 runs the tests in this one process.
PYTEST_ARGS ?=
# pytest keeps each test module as it rewrote its asserts (in __pycache__),
# unless PYTHONDONTWRITEBYTECODE is set, as on some machines: then every worker
# rewrites and compiles every test module again (collecting the 2,571 tests took
# 18.6 s of CPU so, 5.6 s without). The simulator's package loads still write
# no bytecode: the loader turns it off itself.
PYTEST = env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

.PHONY: install build release cli test typecheck lint headless sublime-install os-tools clean bench actionlint \
	check unit unit-sim docs-check

install: $(VENV_STAMP) build os-tools $(CLI_CACHE)/.stamp $(GEMINI_CACHE)/.stamp sublime-install

$(VENV_STAMP): requirements-dev.txt
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

# Pure-Python wheels only, verified against the hashes in vendor/requirements.txt.
$(WHEELS)/.stamp: vendor/requirements.txt | $(VENV_STAMP)
	rm -rf $(WHEELS) && mkdir -p $(WHEELS)
	$(PY) -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
		--only-binary=:all: --platform any --implementation py --abi none --python-version 3.14 \
		-r vendor/requirements.txt -d $(WHEELS)
	touch $@

build: $(BUILT)

$(BUILT): $(WHEELS)/.stamp $(PACKAGE_SOURCES)
	$(PY) tools/build.py $(WHEELS) $(DIST)

# The asset a GitHub release carries and Package Control installs (tools/release.py):
# reproducible, so its sha256 is the same for every build of one commit. Built
# afresh: a source file deleted since the last build must not ship.
release: $(WHEELS)/.stamp
	$(PY) tools/build.py $(WHEELS) $(DIST)
	$(PY) tools/release.py $(DIST)/QwenCompanion $(DIST)/QwenCompanion.sublime-package

cli: $(CLI_CACHE)/.stamp $(GEMINI_CACHE)/.stamp

# The real qwen CLI and Node 22 for the end-to-end tests, pinned by the committed lock.
$(CLI_CACHE)/.stamp: tests/rig/install-cli.sh tests/rig/cli-package.json tests/rig/cli-package-lock.json
	@command -v npm >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; }
	bash tests/rig/install-cli.sh $(CLI_CACHE)
	touch $@

# The real gemini-cli for its end-to-end tests, exactly as the committed lock pins
# it; it runs on the Node 22 of the qwen CLI cache.
$(GEMINI_CACHE)/.stamp: tests/rig/gemini-package.json tests/rig/gemini-package-lock.json
	@command -v npm >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; }
	mkdir -p $(GEMINI_CACHE)
	cp tests/rig/gemini-package.json $(GEMINI_CACHE)/package.json
	cp tests/rig/gemini-package-lock.json $(GEMINI_CACHE)/package-lock.json
	npm ci --prefix $(GEMINI_CACHE) --no-audit --no-fund --ignore-scripts --no-update-notifier \
		--engine-strict=false --loglevel=error </dev/null
	touch $@

# What the tests run besides Python and Node: tmux (the terminal tests) and
# iproute2's `ip` (the remote e2e's network namespace; `unshare`, `mount` are util-linux's).
os-tools:
	@command -v tmux >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux; }
	@command -v ip >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2; }

sublime-install: $(BUILT)
	@$(PY) tools/sublime_install.py $(DIST)/QwenCompanion

# Every workflow in .github/workflows (and the local actions they use); a finding fails `make test`.
actionlint: $(VENV_STAMP)
	$(VENV)/bin/actionlint

# ruff (configured and justified in pyproject.toml) on the package, the tests,
# the bench and tools; then no block of six or more lines may appear twice
# outside the tests (tools/check_repeats.py). Both run, so that findings of
# one do not hide the other's; a finding fails `make test`.
lint: $(VENV_STAMP)
	status=0; $(VENV)/bin/ruff check || status=1; $(PY) tools/check_repeats.py || status=1; exit $$status

# mypy checks the source as the package `QwenCompanion` against sublime-text-stubs.
typecheck: $(VENV_STAMP)
	@mkdir -p $(CACHE)/typecheck && ln -sfn ../../QwenCompanion.sublime-package-src $(CACHE)/typecheck/QwenCompanion
	$(PY) -m mypy

# The user's pages against the package: the README's length, every link and
# anchor of the README and docs/, and the settings and commands references
# against QwenCompanion.sublime-settings and Default.sublime-commands. Reads
# only text: it needs no build.
docs-check: $(VENV_STAMP)
	$(PY) -m pytest -q -n 0 tests/unit/test_docs.py tests/unit/test_docs_links.py

# The checks that need no test: ruff and the repeated-block check, mypy,
# actionlint, the docs.
check: lint typecheck actionlint docs-check

# The pure core's tests (the build's and the release's read dist/ and the wheels).
unit: $(VENV_STAMP) $(BUILT)
	$(PYTEST) tests/unit

# The package's own tests, in the simulated editor too: the bulk of `make test`
# without the real CLIs.
unit-sim: $(VENV_STAMP) $(BUILT)
	$(PYTEST) tests/unit tests/sim

# Every check, then every test group in one parallel run; a missing CLI fails
# the end-to-end tests instead of skipping them. The order is shuffled with a
# new seed each run (tests/order.py; the header prints it, TEST_ORDER=file or
# shuffle:SEED runs another): a test that depends on what ran before fails.
TEST_ORDER ?= shuffle
test: $(VENV_STAMP) $(BUILT) os-tools $(CLI_CACHE)/.stamp $(GEMINI_CACHE)/.stamp check
	QWEN_E2E_REQUIRED=1 $(PYTEST) --order=$(TEST_ORDER) tests/unit tests/robustness tests/e2e tests/sim

# Benchmarks against a peer on the VS Code companion's stack (bench/peer, Node 22
# from the CLI cache); prints the table and writes bench/RESULTS.md. Not part of `make test`.
bench: $(VENV)/.bench-stamp $(BUILT) $(CLI_CACHE)/.stamp $(BENCH_PEER)/server.mjs $(BENCH_PEER)/acp_client.mjs
	$(PY) -m bench.run

$(VENV)/.bench-stamp: bench/requirements.txt | $(VENV_STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check -r bench/requirements.txt
	touch $@

# The peer's dependencies exactly as the committed lock pins them.
$(BENCH_PEER)/.stamp: bench/peer/package.json bench/peer/package-lock.json
	@command -v npm >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; }
	mkdir -p $(BENCH_PEER)
	cp bench/peer/package.json bench/peer/package-lock.json $(BENCH_PEER)/
	npm ci --prefix $(BENCH_PEER) --no-audit --no-fund --ignore-scripts --no-update-notifier \
		--engine-strict=false --loglevel=error </dev/null
	touch $@

# Node resolves the peer's imports next to the script: it runs from the cache.
$(BENCH_PEER)/server.mjs: bench/peer/server.mjs $(BENCH_PEER)/.stamp
	cp $< $@

$(BENCH_PEER)/acp_client.mjs: bench/peer/acp_client.mjs $(BENCH_PEER)/.stamp
	cp $< $@

# Drive the built package in the simulated editor: JSON lines in and out.
headless: $(VENV_STAMP) $(BUILT)
	@$(PY) -m tests.headless --workspace "$(WORKSPACE)"

clean:
	rm -rf $(DIST) $(CACHE) $(VENV) .mypy_cache .pytest_cache
