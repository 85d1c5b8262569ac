"""tools/build.py and the built package in dist/QwenCompanion."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist" / "QwenCompanion"
WHEELS = ROOT / ".cache" / "wheels"
PREFIX = "QwenCompanion._vendor"
NAMES = ["aiohttp", "attr", "attrs", "mcp_types", "yarl"]
RUNTIME_LIBRARIES = {"pydantic", "pydantic-core", "annotated-types", "typing-inspection", "typing-extensions"}


def _load_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("qwen_tools_build", ROOT / "tools" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = _load_build()


def rewrite(text: str) -> str:
    result: str = build.rewrite_source(text, NAMES)
    return result


# --- rewrite_source -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from aiohttp import web\n", f"from {PREFIX}.aiohttp import web\n"),
        ("from aiohttp.web import Response, json_response\n", f"from {PREFIX}.aiohttp.web import Response, json_response\n"),
        ("from aiohttp.web_runner.x import (\n    a,\n)\n", f"from {PREFIX}.aiohttp.web_runner.x import (\n    a,\n)\n"),
        ("import aiohttp\n", f"from {PREFIX} import aiohttp\n"),
        ("import aiohttp as ah\n", f"import {PREFIX}.aiohttp as ah\n"),
        ("import aiohttp.web\n", f"import {PREFIX}.aiohttp.web; from {PREFIX} import aiohttp\n"),
        ("import aiohttp.web as w\n", f"import {PREFIX}.aiohttp.web as w\n"),
        ("import yarl  # comment\n", f"from {PREFIX} import yarl  # comment\n"),
        ("import yarl; import os\n", f"from {PREFIX} import yarl; import os\n"),
        ("    from attr import define\n", f"    from {PREFIX}.attr import define\n"),
        ("\timport attrs\n", f"\tfrom {PREFIX} import attrs\n"),
        ("if x:\n    import mcp_types.jsonrpc as j\n", f"if x:\n    import {PREFIX}.mcp_types.jsonrpc as j\n"),
        ("import attrs\nimport attr\n", f"from {PREFIX} import attrs\nfrom {PREFIX} import attr\n"),
        ("from attrs import frozen\n", f"from {PREFIX}.attrs import frozen\n"),
    ],
)
def test_rewrite_source_rules(source: str, expected: str) -> None:
    assert rewrite(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        "import attrsx\n",
        "from attrsx import y\n",
        "import aiohttp_jinja2\n",
        "from aiohttp_cors import setup\n",
        "import yarlish as y\n",
        "import mcp_types_extra.x\n",
        "import os\n",
        "from . import aiohttp\n",
        "from .aiohttp import web\n",
        "x = 'import aiohttp'\n",
        "# from aiohttp import web\n",
        "import pydantic\n",
        "from pydantic import BaseModel\n",
    ],
)
def test_rewrite_source_leaves_other_names_alone(source: str) -> None:
    assert rewrite(source) == source


def test_rewrite_source_attrs_import_special_case() -> None:
    source = "hash_def += \", _cache_wrapper=__import__('attr._make')._make._CacheHashWrapper):\"\n"
    rewritten = rewrite(source)
    assert "__import__('attr._make')" not in rewritten
    assert f"__import__('{PREFIX}.attr._make', fromlist=['_make'])._CacheHashWrapper" in rewritten


def test_rewrite_source_module_path_strings_for_importlib() -> None:
    # acp looks deprecated names up with import_module("acp.core") from "acp.core:Name".
    source = 'NAMES = [("X", "attr.core:X", "use Y"), (\'Z\', \'yarl:Z\', "")]\n'
    assert rewrite(source) == (
        f'NAMES = [("X", "{PREFIX}.attr.core:X", "use Y"), (\'Z\', \'{PREFIX}.yarl:Z\', "")]\n'
    )


@pytest.mark.parametrize(
    "source",
    ['name = "attr.Connection.receive"\n', 'x = "attrsx.core:X"\n', 'x = "attr.core: X"\n', 'x = "os.path:join"\n'],
)
def test_rewrite_source_leaves_other_strings_alone(source: str) -> None:
    assert rewrite(source) == source


def test_unrewritten_imports_are_reported_and_stop_the_build(tmp_path: Path) -> None:
    assert build.unrewritten_imports("import aiohttp, os\nimport attrsx\nfrom yarl import URL\n", NAMES) == [
        "import aiohttp, os",
        "from yarl import URL",
    ]
    (tmp_path / "mod.py").write_text("import aiohttp, os\n")
    with pytest.raises(SystemExit, match="aiohttp"):
        build.rewrite_tree(tmp_path, NAMES)


def test_vendored_names_finds_packages_and_modules(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg-1.0.dist-info").mkdir()
    (tmp_path / "single.py").write_text("")
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "data").mkdir()
    assert build.vendored_names(tmp_path) == ["pkg", "single"]


# --- pins ----------------------------------------------------------------------------------


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for commented in path.read_text(encoding="utf-8").splitlines():
        line = commented.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.match(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", line)
        assert match, f"not an exact pin in {path.name}: {line}"
        pins[_normalize(match[1])] = match[2]
    return pins


VENDOR_REQUIREMENTS = ROOT / "vendor" / "requirements.txt"


def test_vendored_pins_equal_the_development_pins() -> None:
    vendored = _pins(VENDOR_REQUIREMENTS)
    development = _pins(ROOT / "requirements-dev.txt")
    assert vendored
    assert {name: development.get(name) for name in vendored} == vendored


def test_every_vendored_pin_has_a_sha256_hash() -> None:
    lines = [line for line in VENDOR_REQUIREMENTS.read_text().splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert lines
    for line in lines:
        assert re.search(r"--hash=sha256:[0-9a-f]{64}\b", line), line


def test_runtime_libraries_from_package_control_are_not_vendored() -> None:
    assert not (set(_pins(VENDOR_REQUIREMENTS)) & RUNTIME_LIBRARIES)


def _wheels() -> list[Path]:
    wheels = sorted(WHEELS.glob("*.whl"))
    if not wheels:
        pytest.fail(f"no wheels in {WHEELS.relative_to(ROOT)}: run `make build` first")
    return wheels


def test_the_downloaded_wheels_match_the_pinned_hashes() -> None:
    hashes = {}
    for line in VENDOR_REQUIREMENTS.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)\s+--hash=sha256:([0-9a-f]{64})", line.strip())
        if match:
            hashes[(_normalize(match[1]), match[2])] = match[3]
    seen = set()
    for wheel in _wheels():
        name, version = wheel.name.split("-")[:2]
        key = (_normalize(name), version)
        assert key in hashes, f"{wheel.name} is not pinned"
        assert hashlib.sha256(wheel.read_bytes()).hexdigest() == hashes[key], wheel.name
        seen.add(key)
    assert seen == set(hashes)


# --- the built package ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dist() -> Path:
    if not (DIST / ".no-sublime-package").exists():
        pytest.fail("dist/QwenCompanion is missing: run `make build` first")
    return DIST


def test_dist_has_the_package_control_files(dist: Path) -> None:
    assert (dist / ".no-sublime-package").is_file()
    assert (dist / ".python-version").read_text().strip() == "3.14"
    for name in ("Default.sublime-commands", "Main.sublime-menu", "boot.py", "core/companion/server.py"):
        assert (dist / name).is_file(), name
    for name in ("Default.sublime-commands", "Main.sublime-menu"):
        assert (dist / name).read_text().strip().startswith("["), name


def test_dist_dependencies_json_lists_the_runtime_libraries(dist: Path) -> None:
    data = json.loads((dist / "dependencies.json").read_text())
    listed = {name for selectors in data.values() for names in selectors.values() for name in names}
    assert listed == RUNTIME_LIBRARIES


def test_dist_vendors_exactly_the_pinned_versions(dist: Path) -> None:
    infos = {
        _normalize(p.name[: -len(".dist-info")].rsplit("-", 1)[0]): p.name[: -len(".dist-info")].rsplit("-", 1)[1]
        for p in (dist / "_vendor").glob("*.dist-info")
    }
    assert infos == _pins(VENDOR_REQUIREMENTS)


def _absolute_vendored_imports(tree_root: Path, names: set[str], parts: tuple[str, ...] = ()) -> list[str]:
    found = []
    files = [p for part in parts for p in (tree_root / part).rglob("*.py")] if parts else list(tree_root.rglob("*.py"))
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                if module.split(".")[0] in names:
                    found.append(f"{path.relative_to(tree_root)}:{node.lineno}: {module}")
    return found


def test_no_file_in_dist_imports_a_vendored_name_at_top_level(dist: Path) -> None:
    names = set(build.vendored_names(dist / "_vendor"))
    assert {"aiohttp", "mcp_types", "yarl", "multidict", "attr"} <= names
    assert _absolute_vendored_imports(dist, names) == []


def test_a_fresh_build_rewrites_every_vendored_import(tmp_path: Path) -> None:
    _wheels()
    target = build.build(WHEELS, tmp_path)
    assert target == tmp_path / "QwenCompanion"
    assert (target / ".no-sublime-package").exists()
    names = set(build.vendored_names(target / "_vendor"))
    assert _absolute_vendored_imports(target, names, ("_vendor", "core")) == []
    assert "from QwenCompanion._vendor.aiohttp import web" in (target / "core" / "companion" / "server.py").read_text()


ISOLATION_PROBE = r"""
import json, sys, tempfile, urllib.request
from pathlib import Path

dist_parent, names = sys.argv[1], set(json.loads(sys.argv[2]))
attempts = []

class RefuseTopLevelVendored:
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in names:
            attempts.append(fullname)
            raise ImportError(f"top-level import of a vendored name: {fullname}")
        return None

sys.meta_path.insert(0, RefuseTopLevelVendored())
sys.path.insert(0, dist_parent)

from QwenCompanion.core.companion.companion import Companion
from QwenCompanion.core.loop_thread import LoopThread

thread = LoopThread("QwenCompanion server")
thread.start()
companion = Companion(thread, folders=[], lock_directory=Path(tempfile.mkdtemp()) / "ide")
companion.start()
try:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}}).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{companion.port}/mcp", data=body, method="POST",
        headers={"Authorization": f"Bearer {companion.token}", "Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=10) as response:
        status, session, answer = response.status, response.headers.get("Mcp-Session-Id"), json.loads(response.read())
finally:
    companion.stop()
    thread.stop()

vendored = sys.modules["QwenCompanion._vendor.aiohttp"]
print(json.dumps({
    "status": status,
    "session": session,
    "version": answer["result"]["protocolVersion"],
    "attempts": attempts,
    "top_level": sorted(m for m in sys.modules if m.split(".")[0] in names),
    "aiohttp_file": vendored.__file__,
    "mcp_types_file": sys.modules["QwenCompanion._vendor.mcp_types"].__file__,
}))
"""


def test_the_built_package_runs_on_its_vendored_copies_only(dist: Path) -> None:
    names = build.vendored_names(dist / "_vendor")
    completed = subprocess.run(
        [sys.executable, "-I", "-c", ISOLATION_PROBE, str(dist.parent), json.dumps(names)],
        capture_output=True, check=False,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["attempts"] == []
    assert result["top_level"] == []
    assert result["status"] == 200 and result["session"]
    assert result["version"] == "2025-06-18"
    assert Path(result["aiohttp_file"]).is_relative_to(dist / "_vendor" / "aiohttp")
    assert Path(result["mcp_types_file"]).is_relative_to(dist / "_vendor" / "mcp_types")


ACP_PROBE = r"""
import json, sys, warnings
dist_parent, names = sys.argv[1], set(json.loads(sys.argv[2]))

class RefuseTopLevelVendored:
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in names:
            raise ImportError(f"top-level import of a vendored name: {fullname}")
        return None

sys.meta_path.insert(0, RefuseTopLevelVendored())
sys.path.insert(0, dist_parent)
warnings.simplefilter("ignore", DeprecationWarning)
from QwenCompanion._vendor import acp
# Resolved through importlib from a "module:attribute" string.
print(json.dumps({"module": acp.ClientSideConnection.__module__, "file": acp.__file__}))
"""


def test_the_built_acp_resolves_its_importlib_names_inside_the_package(dist: Path) -> None:
    names = build.vendored_names(dist / "_vendor")
    assert "acp" in names
    completed = subprocess.run(
        [sys.executable, "-I", "-c", ACP_PROBE, str(dist.parent), json.dumps(names)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["module"] == "QwenCompanion._vendor.acp.client.connection"
    assert Path(result["file"]).is_relative_to(dist / "_vendor" / "acp")
