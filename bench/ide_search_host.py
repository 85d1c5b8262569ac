"""The project-wide IDE tools under benchmark, in the simulated host (a
process of its own), called as the CLI calls them. Prints one JSON line:

    python -m bench.ide_search_host WORKDIR CALLS

- "search_ms", "git_grep_ms", "rg_ms": search_project for a word on a
  10,000-file git repository at the client, and `git grep -n` / `rg -n` for
  the same word run as processes (rg only where installed), interleaved;
  "same_matches": whether search_project's path:line pairs are git grep's;
- "references_ms": find_references by name on a project of 5,000 indexed symbols, and
  "references_index_ms" the simulator's `Window.symbol_locations` alone for the same name
  (from the simulator's index, which, like Sublime's, parses a file again only when it changed);
- "editors_main_ms": the main thread's CPU time during get_open_editors with 200 open views.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.host import BUILT_PACKAGE, PACKAGE
from bench.ide_tools_host import tools_client
from tests.sublime_sim import SimulatedHost

FILES = 10_000
SYMBOL_FILES = 100  # 50 definitions each: 5,000 indexed symbols
OPEN_VIEWS = 200
WORD = "needle_word"


def repository(folder: Path) -> None:
    """FILES small source files in 100 folders, one in 20 holding WORD; all committed."""
    for number in range(FILES):
        directory = folder / f"pkg{number % 100}"
        directory.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def function_{number}_{line}(value):\n    return value + {line}\n" for line in range(20))
        if number % 20 == 0:
            body += f"# {WORD} in file {number}\n"
        (directory / f"module{number}.py").write_text(body)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "add", "-A"], check=True)


def symbols_project(folder: Path) -> None:
    for number in range(SYMBOL_FILES):
        lines = [f"def symbol_{number}_{index}():\n    return target_name()\n" for index in range(50)]
        (folder / f"symbols{number}.py").write_text("".join(lines))
    (folder / "target.py").write_text("def target_name():\n    return 1\n")


def timed(run: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    value = run()
    return (time.perf_counter() - start) * 1000, value


def main(workdir: Path, calls: int) -> dict[str, Any]:
    host = SimulatedHost(workdir / "Packages", check_threads=False)
    try:
        host.install_package(BUILT_PACKAGE, PACKAGE)
        repo, symbols = workdir / "repo", workdir / "symbols"
        repo.mkdir(exist_ok=True)
        symbols.mkdir(exist_ok=True)
        repository(repo)
        symbols_project(symbols)
        host.user.set_folders([str(repo)])
        client = tools_client(host)
        results: dict[str, Any] = {"search_ms": [], "git_grep_ms": [], "rg_ms": []}
        rg = shutil.which("rg")
        search = {"query": WORD, "max_results": 1000}
        for _ in range(calls):
            elapsed, answer = timed(lambda: client.call("search_project", search))
            results["search_ms"].append(elapsed)
            elapsed, grep = timed(lambda: subprocess.run(["git", "-C", str(repo), "grep", "-n", WORD],
                                                         capture_output=True, text=True, check=True).stdout)
            results["git_grep_ms"].append(elapsed)
            if rg is not None:
                results["rg_ms"].append(timed(lambda: subprocess.run(
                    [rg, "-n", WORD, str(repo)], capture_output=True, check=True))[0])
        ours = {tuple(line.split(":")[:2]) for line in answer["content"][0]["text"].splitlines()}
        theirs = {tuple(line.split(":")[:2]) for line in grep.splitlines()}
        results["same_matches"] = ours == theirs and len(ours) == FILES // 20

        host.user.set_folders([str(symbols)])
        host.wait_idle()
        references = [timed(lambda: client.call("find_references", {"symbol": "target_name"}))[0] for _ in range(calls)]
        results["references_ms"] = references
        index = host.sublime.SymbolSource.ANY, host.sublime.SymbolType.REFERENCE
        results["references_index_ms"] = [  # the simulator's index alone
            timed(lambda: host.window.symbol_locations("target_name", *index))[0] for _ in range(calls)]

        host.user.set_folders([str(repo)])
        for number in range(OPEN_VIEWS):
            host.user.open_file(repo / f"pkg{number % 100}" / f"module{number}.py")
        host.wait_idle()
        main_clock = time.pthread_getcpuclockid(host.main_thread.ident)
        editors = []
        for _ in range(calls):
            cpu = time.clock_gettime(main_clock)
            answer = client.call("get_open_editors", {})
            editors.append((time.clock_gettime(main_clock) - cpu) * 1000)
        assert len(json.loads(answer["content"][0]["text"])["editors"]) == OPEN_VIEWS
        results["editors_main_ms"] = editors
        return results
    finally:
        host.close()


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), int(sys.argv[2]))), flush=True)
