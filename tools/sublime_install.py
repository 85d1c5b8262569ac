"""Copy the built package into Sublime Text's Packages folder, if there is one.

SUBLIME_PACKAGES_DIR names the folder explicitly; otherwise the usual per-OS
locations are tried. Without Sublime Text on the machine this says so and exits 0.

Usage: python tools/sublime_install.py dist/QwenCompanion
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def candidate_packages_dirs() -> list[Path]:
    explicit = os.environ.get("SUBLIME_PACKAGES_DIR")
    if explicit:
        return [Path(explicit).expanduser()]
    home = Path.home()
    if sys.platform == "darwin":
        return [home / "Library/Application Support/Sublime Text/Packages"]
    if sys.platform == "win32":
        appdata = Path(os.environ.get("APPDATA", home / "AppData/Roaming"))
        return [appdata / "Sublime Text/Packages"]
    config = Path(os.environ.get("XDG_CONFIG_HOME", home / ".config"))
    return [config / "sublime-text/Packages", config / "sublime-text-3/Packages"]


def main(argv: list[str]) -> int:
    built = Path(argv[1])
    found = [d for d in candidate_packages_dirs() if d.is_dir()]
    if not found:
        where = ", ".join(str(d) for d in candidate_packages_dirs())
        print(f"No Sublime Text Packages folder found (looked in {where}); "
              "the package is built in dist/ and was not installed. "
              "Set SUBLIME_PACKAGES_DIR to install it.")
        return 0
    target = found[0] / built.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(built, target)
    print(f"Installed {built.name} into {found[0]}; Sublime Text reloads it on its own.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
