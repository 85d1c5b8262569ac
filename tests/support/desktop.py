"""Stand-ins for the platforms' notification tools (notify-send, osascript,
powershell.exe), first on PATH in every simulated editor's test: the package's
real runner starts them, and they only write down what they were given, so no
test pops a desktop notification."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TOOLS = ("notify-send", "osascript", "powershell.exe")
STUB = """#!{python}
import json, os, sys
entry = {{"tool": os.path.basename(sys.argv[0]), "argv": sys.argv[1:],
          "env": {{k: v for k, v in os.environ.items() if k.startswith("QWEN_COMPANION_NOTIFY_")}}}}
with open({log!r}, "a", encoding="utf-8") as log:
    log.write(json.dumps(entry) + "\\n")
"""


class DesktopTools:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.log = folder / "calls.jsonl"
        folder.mkdir(parents=True, exist_ok=True)
        for tool in TOOLS:
            stub = folder / tool
            stub.write_text(STUB.format(python=sys.executable, log=str(self.log)), encoding="utf-8")
            stub.chmod(0o755)

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(autouse=True)
def desktop_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DesktopTools]:
    tools = DesktopTools(tmp_path / "desktop-tools")
    monkeypatch.setenv("PATH", f"{tools.folder}{os.pathsep}{os.environ.get('PATH', '')}")
    yield tools
