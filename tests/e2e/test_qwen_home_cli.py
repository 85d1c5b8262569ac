"""The package's lock folder is the one the real CLI reads.

The CLI's own `cli-entry.js` runs (it settles QWEN_HOME, reading the home
.env files), then its own `Storage.getGlobalIdeDir()` answers, for HOME,
QWEN_HOME, .env files and working directories that differ. The Windows rules
(USERPROFILE, `\\` paths) cannot run here; tests/unit/test_qwen_home.py has them.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from qwencompanion_src.core.companion import lockfile
from tests.rig.qwen_cli import QwenCli

MARK = "QWEN_IDE_DIR="


def _storage_chunk(cli: QwenCli) -> Path:
    for chunk in sorted((cli.package_dir / "chunks").glob("*.js")):
        if "static getGlobalIdeDir()" in chunk.read_text(encoding="utf-8", errors="replace"):
            return chunk
    raise AssertionError("the CLI bundle has no Storage.getGlobalIdeDir")


def cli_ide_dir(cli: QwenCli, env: dict[str, str], cwd: Path, hook_dir: Path) -> str:
    hook = hook_dir / "print-ide-dir.mjs"
    hook.write_text(
        f"import {{ Storage }} from {_storage_chunk(cli).as_uri()!r};\n"
        f"process.on('exit', () => process.stderr.write({MARK!r} + Storage.getGlobalIdeDir() + '\\n'));\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [str(cli.node), "--import", hook.as_uri(), str(cli.entry), "--version"],
        env={"PATH": "/usr/bin:/bin", "QWEN_CODE_NO_RELAUNCH": "true", **env},
        cwd=cwd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False,
    )
    found = re.search(f"^{MARK}(.*)$", done.stderr, re.MULTILINE)
    assert found, done.stderr
    return found[1]


@pytest.mark.parametrize(
    ("qwen_home", "qwen_env_file", "home_env_file"),
    [
        (None, None, None),
        ("~", None, None),
        ("~/alt", None, None),
        ("~\\back\\slash", None, None),
        ("relative/dir", None, None),
        ("{tmp}/abs/x/../y/", None, None),
        ("", "QWEN_HOME=~/ignored", None),
        (None, "export QWEN_HOME: '~/from-qwen-env' # yaml style", "QWEN_HOME=~/from-home-env"),
        (None, "OTHER=1", 'QWEN_HOME="~/from-home-env"'),
    ],
)
def test_the_package_and_the_cli_agree_on_the_lock_folder(
    qwen_cli: QwenCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    qwen_home: str | None, qwen_env_file: str | None, home_env_file: str | None,
) -> None:
    home = tmp_path / "home"
    (home / ".qwen").mkdir(parents=True)
    cwd = tmp_path / "project"
    cwd.mkdir()
    if qwen_env_file is not None:
        (home / ".qwen" / ".env").write_text(qwen_env_file, encoding="utf-8")
    if home_env_file is not None:
        (home / ".env").write_text(home_env_file, encoding="utf-8")
    env = {"HOME": str(home)}
    if qwen_home is not None:
        env["QWEN_HOME"] = qwen_home.replace("{tmp}", str(tmp_path))

    expected = cli_ide_dir(qwen_cli, env, cwd, tmp_path)
    monkeypatch.chdir(cwd)  # a relative QWEN_HOME depends on the working directory, for both
    assert str(lockfile.lock_dir(env)) == expected
