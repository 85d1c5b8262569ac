"""Run the real gemini-cli (pinned in tests/rig/gemini-package-lock.json,
installed by make into .cache/gemini-cli) in tests, on the qwen cache's Node 22.

- ``find_gemini()`` locates the install;
- ``make_gemini_home()`` writes an isolated HOME whose settings turn IDE mode
  on and first-run dialogs, update checks and telemetry off;
- ``gemini_env()`` builds the CLI's whole environment from scratch.

The API key is fake; a test that prompts points GOOGLE_GEMINI_BASE_URL at
tests/rig/fake_gemini_model.py.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.rig.qwen_cli import QwenCli, package_version

REPO_ROOT = Path(__file__).resolve().parents[2]
GEMINI_VERSION = "0.61.0"
DEFAULT_CACHE_DIR = REPO_ROOT / ".cache" / "gemini-cli"


@dataclass(frozen=True)
class GeminiCli:
    cache_dir: Path
    qwen: QwenCli  # whose Node 22 runs gemini too

    @property
    def package_dir(self) -> Path:
        return self.cache_dir / "node_modules" / "@google" / "gemini-cli"

    @property
    def entry(self) -> Path:
        return self.package_dir / "bundle" / "gemini.js"

    @property
    def version(self) -> str | None:
        return package_version(self.package_dir)

    def missing_reason(self) -> str | None:
        if not self.entry.is_file():
            return f"gemini-cli not found at {self.entry} (run make cli)"
        if self.version != GEMINI_VERSION:
            return f"gemini-cli {self.version} installed, {GEMINI_VERSION} expected"
        return self.qwen.missing_reason()

    def write_launcher(self, folder: Path) -> Path:
        """A `gemini` executable in `folder` (to put on PATH), as npm's bin link would be."""
        folder.mkdir(parents=True, exist_ok=True)
        launcher = folder / "gemini"
        launcher.write_text(f'#!/bin/sh\nexec "{self.qwen.node}" "{self.entry}" "$@"\n')
        launcher.chmod(0o755)
        return launcher


def find_gemini(qwen: QwenCli, cache_dir: Path | None = None) -> GeminiCli:
    return GeminiCli((cache_dir or DEFAULT_CACHE_DIR).resolve(), qwen)


def make_gemini_home(tmp: Path) -> Path:
    """`tmp/gemini-home` with `.gemini/settings.json`: IDE mode on, no dialogs."""
    home = tmp / "gemini-home"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "ide": {"enabled": True, "hasSeenNudge": True},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        # A fixed model: "auto" first asks a router model; no side call after a turn.
        "model": {"name": "gemini-2.5-flash", "skipNextSpeakerCheck": True},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings, indent=2))
    return home


def gemini_env(gemini: GeminiCli, home: Path, temp: Path, bin_dir: Path, extra: Mapping[str, str]) -> dict[str, str]:
    """The CLI's complete environment (nothing inherited), then `extra` over it.

    In a container (/.dockerenv) gemini-cli looks for the IDE at
    host.docker.internal unless it believes it runs in a dev container or over
    SSH (ide-connection-utils.ts, getIdeServerHost); here the "IDE" runs in
    the same container, so the rig says so with REMOTE_CONTAINERS."""
    env = {
        "HOME": str(home),
        "PATH": os.pathsep.join([str(bin_dir), str(gemini.qwen.node.parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "TZ": "UTC",
        "TMPDIR": str(temp),  # where the companion published the discovery file
        "GEMINI_CLI_NO_RELAUNCH": "true",  # else it re-executes itself first
        "GEMINI_API_KEY": "rig-fake-key",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    if Path("/.dockerenv").exists() or Path("/run/.containerenv").exists():
        env["REMOTE_CONTAINERS"] = "true"
    env.update(extra)
    return env
