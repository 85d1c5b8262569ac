"""Pack the built package into the release asset Package Control installs.

    python tools/release.py BUILT_DIR ASSET [CHANGELOG]

BUILT_DIR is `make build`'s dist/QwenCompanion. The asset is a zip of it with
the files at the archive's root, so the `.no-sublime-package` marker sits where
Package Control looks for it (it then unpacks the package into Packages/
instead of keeping the zip in Installed Packages). No bytecode, no tests.

The archive is reproducible: entries sorted by name, every entry dated
1980-01-01 00:00:00 with mode 0644 and Unix as the creating system, and one
compression level, so two builds of one commit have the same sha256.

The version in core/version.py must have an upgrade message in messages.json
and a section in CHANGELOG.md, else nothing is written.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = ".no-sublime-package"
VERSION_FILE = Path("core") / "version.py"
# The earliest date a zip entry can hold.
FIXED_DATE = (1980, 1, 1, 0, 0, 0)
FILE_MODE = 0o100644  # a regular file, rw-r--r--
UNIX = 3  # zip "version made by" host system, so modes are read on every platform
COMPRESS_LEVEL = 9
EXCLUDED_DIRS = frozenset({"__pycache__", "tests", ".mypy_cache"})
EXCLUDED_SUFFIXES = (".pyc", ".pyo")


def package_version(built: Path) -> str:
    text = (built / VERSION_FILE).read_text(encoding="utf-8")
    found = re.search(r'^VERSION = "([^"]+)"$', text, re.MULTILINE)
    if found is None:
        raise SystemExit(f"release: no VERSION = \"...\" line in {VERSION_FILE}")
    return found[1]


def version_problems(built: Path, changelog: Path, version: str) -> list[str]:
    """Where the version is not described: an empty list when it is."""
    problems = []
    messages = json.loads((built / "messages.json").read_text(encoding="utf-8"))
    message = messages.get(version)
    if message is None:
        problems.append(f"messages.json has no upgrade message for {version}")
    elif not (built / message).is_file():
        problems.append(f"messages.json names {message} for {version}, which is not in the package")
    sections = re.findall(r"^## (\S+)", changelog.read_text(encoding="utf-8"), re.MULTILINE)
    if not sections or sections[0] != version:
        problems.append(f"CHANGELOG.md's newest section is {sections[0] if sections else 'missing'}, not {version}")
    return problems


def release_entries(built: Path) -> list[str]:
    """The archive's file names (POSIX, relative to the package root), sorted."""
    names = []
    for path in built.rglob("*"):
        relative = path.relative_to(built)
        if not path.is_file() or EXCLUDED_DIRS.intersection(relative.parts[:-1]):
            continue
        if path.name.endswith(EXCLUDED_SUFFIXES):
            continue
        names.append(relative.as_posix())
    return sorted(names)


def write_asset(built: Path, names: list[str], asset: Path) -> str:
    """Write the zip (through a temporary file); returns its sha256."""
    asset.parent.mkdir(parents=True, exist_ok=True)
    partial = asset.with_name(asset.name + ".partial")
    with zipfile.ZipFile(partial, "w") as archive:
        for name in names:
            entry = zipfile.ZipInfo(name, FIXED_DATE)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.create_system = UNIX
            entry.external_attr = FILE_MODE << 16
            archive.writestr(entry, (built / name).read_bytes(), compresslevel=COMPRESS_LEVEL)
    partial.replace(asset)
    return hashlib.sha256(asset.read_bytes()).hexdigest()


def release(built: Path, asset: Path, changelog: Path) -> str:
    if not (built / MARKER).is_file():
        raise SystemExit(f"release: {built} is not a built package (no {MARKER}); run `make build`")
    version = package_version(built)
    problems = version_problems(built, changelog, version)
    if problems:
        raise SystemExit("release: version " + version + " is not ready:\n" + "\n".join(problems))
    return write_asset(built, release_entries(built), asset)


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    built, asset = Path(argv[1]), Path(argv[2])
    changelog = Path(argv[3]) if len(argv) == 4 else ROOT / "CHANGELOG.md"
    digest = release(built, asset, changelog)
    print(f"{asset} {package_version(built)} sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
