"""Installing a release asset the way Package Control 4 does, for the simulated host.

What Package Control does with a downloaded package (read in its code, 4.2.8:
package_manager.py `install_package`, `_common_folder`, `_extract_zip`,
`select_libraries`; sys_path.py `lib_paths`):

* an entry that starts with "/" or holds "../", ":/", "..\\" or ":\\" aborts
  the install;
* a folder that holds every entry is stripped;
* with `.no-sublime-package` at the package's root, the package is unpacked
  into `Packages/<name>/` (a root `__init__.py` is not extracted); without it
  the zip is kept as `Installed Packages/<name>.sublime-package`, which the
  simulated host does not load, so that is refused here;
* the libraries are the package's `dependencies.json` entry for the platform
  (`<platform>-<arch>`, `<platform>`, then `*`) and the first build selector,
  in reverse sorted order, that the build matches; they go into
  `Lib/python314` for the 3.14 plugin host (Sublime Text 4203 and later).

The simulated host runs the package in the test interpreter, whose installed
distributions stand in for `Lib/python314`: a library is present when this
interpreter has it installed.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import zipfile
from pathlib import Path

MARKER = ".no-sublime-package"
UNSAFE = ("../", ":/", "..\\", ":\\")


class NotInstallable(Exception):
    pass


def common_folder(names: list[str]) -> str:
    """The folder all entries are in ("" when none), ending in "/"."""
    parts = [[part for part in name.split("/") if part and part != "."] for name in names]
    first, last = min(parts), max(parts)
    common: list[str] = []
    for mine, theirs in zip(first[:-1], last, strict=False):
        if mine != theirs:
            break
        common.append(mine)
    return "/".join(common) + "/" if common else ""


def install_asset(asset: Path, packages_dir: Path, name: str) -> Path:
    """Unpack `asset` into `packages_dir/name` as Package Control does; returns that folder."""
    with zipfile.ZipFile(asset) as archive:
        names = archive.namelist()
        unsafe = [n for n in names if n.startswith("/") or any(u in n for u in UNSAFE)]
        if unsafe:
            raise NotInstallable(f"entries outside the package: {unsafe}")
        root = common_folder(names)
        if root + MARKER not in names:
            raise NotInstallable(f"no {MARKER} at the package's root: it would stay a zip in Installed Packages")
        target = packages_dir / name
        target.mkdir(parents=True)
        for entry in archive.infolist():
            relative = entry.filename[len(root):]
            if entry.is_dir() or entry.filename == root + "__init__.py":
                continue
            destination = target / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(archive.read(entry))
    return target


def build_matches(selector: str, build: int) -> bool:
    """Package Control's build selectors: "*", ">N", ">=N", "<N", "<=N", "N - M"."""
    selector = selector.strip()
    if selector == "*":
        return True
    ranged = re.fullmatch(r"(\d+)\s*-\s*(\d+)", selector)
    if ranged:
        return int(ranged[1]) <= build <= int(ranged[2])
    compared = re.fullmatch(r"(>=|<=|>|<)(\d+)", selector)
    if compared is None:
        raise NotInstallable(f"not a build selector: {selector!r}")
    operator, number = compared[1], int(compared[2])
    return {">=": build >= number, "<=": build <= number, ">": build > number, "<": build < number}[operator]


def required_libraries(package_dir: Path, platform: str, arch: str, build: int) -> list[str]:
    """The libraries Package Control installs for the package on this machine."""
    declared = json.loads((package_dir / "dependencies.json").read_text(encoding="utf-8"))
    for platform_key in (f"{platform}-{arch}", platform, "*"):
        if platform_key in declared:
            for selector in sorted(declared[platform_key], reverse=True):
                if build_matches(selector, build):
                    return list(declared[platform_key][selector])
            return []
    return []


def missing_libraries(names: list[str]) -> list[str]:
    """Those of `names` not installed for this interpreter (the stand-in for Lib/python314)."""
    missing = []
    for name in names:
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    return missing
