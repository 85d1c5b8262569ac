"""dependencies.missing_dependency_message: a sentence, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from qwencompanion_src.core import dependencies

DEPENDENCIES_PY = Path(dependencies.__file__)
# The text real pydantic raises when pydantic and pydantic-core do not match (pydantic/version.py).
PYDANTIC_SYSTEM_ERROR = (
    "The installed pydantic-core version (2.41.1) is incompatible with the current pydantic version, "
    "which requires 2.50.4. If you encounter this error, make sure that you haven't upgraded pydantic-core manually."
)

PROBE = r"""
import importlib.util, json, sys
sys.path[:0] = json.loads(sys.argv[2])
spec = importlib.util.spec_from_file_location("deps_probe", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(json.dumps({"message": module.missing_dependency_message()}))
"""


def _run(extra_path: list[str], *flags: str) -> str | None:
    completed = subprocess.run(
        [sys.executable, *flags, "-c", PROBE, str(DEPENDENCIES_PY), json.dumps(extra_path)],
        capture_output=True, check=False,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert "Traceback" not in completed.stdout + completed.stderr
    message: str | None = json.loads(completed.stdout.strip().splitlines()[-1])["message"]
    return message


def _fake_package(root: Path, name: str, init: str) -> Path:
    package = root / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(init, encoding="utf-8")
    return root


def test_no_message_when_pydantic_imports() -> None:
    assert dependencies.missing_dependency_message() is None
    assert _run([], "-I") is None


def test_mismatched_pydantic_core_gives_a_clear_message(tmp_path: Path) -> None:
    root = _fake_package(tmp_path, "pydantic", f"raise SystemError({PYDANTIC_SYSTEM_ERROR!r})\n")
    message = _run([str(root)], "-I")
    assert message is not None
    assert message.startswith("Qwen Companion cannot start")
    assert "pydantic-core do not match" in message
    assert "incompatible" in message  # pydantic's own reason is kept
    assert "Package Control: Satisfy Libraries" in message
    assert "Traceback" not in message and "\n" not in message


def test_missing_pydantic_gives_a_clear_message(tmp_path: Path) -> None:
    # -S: no site-packages, so pydantic is really absent.
    message = _run([], "-I", "-S")
    assert message is not None
    assert "the library 'pydantic' is missing" in message
    assert "Package Control: Satisfy Libraries" in message
    assert "Traceback" not in message


def test_missing_pydantic_core_names_it(tmp_path: Path) -> None:
    root = _fake_package(tmp_path, "pydantic", "import pydantic_core\n")
    message = _run([str(root)], "-I", "-S")
    assert message is not None
    assert "the library 'pydantic_core' is missing" in message


def test_the_host_check_accepts_only_the_3_14_plugin_host() -> None:
    assert dependencies.host_python_message((3, 14)) is None
    for old_host in ((3, 8), (3, 13)):
        message = dependencies.host_python_message(old_host)
        assert message is not None
        assert "3.14" in message and "4205" in message and ".".join(map(str, old_host)) in message


def test_a_wrong_host_is_named_as_the_cause_when_the_libraries_fail() -> None:
    host = dependencies.host_python_message((3, 8))
    missing = "Qwen Companion cannot start: the library 'pydantic' is missing."
    assert dependencies.startup_problem(host, missing) == f"{missing} {host}"
    assert dependencies.startup_problem(None, missing) == missing
    assert dependencies.startup_problem(host, None) is None  # libraries import: only logged


def test_dependencies_json_asks_for_the_3_14_host_builds() -> None:
    selectors = json.loads((DEPENDENCIES_PY.parent.parent / "dependencies.json").read_text())["*"]
    assert list(selectors) == [">=4205"]
