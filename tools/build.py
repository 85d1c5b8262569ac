"""Build the package into dist/QwenCompanion exactly as Package Control installs it.

The result is an unpacked package folder with a `.no-sublime-package` marker.
The vendored wheels (vendor/requirements.txt) are unpacked into `_vendor/` and
every import of a vendored library, in those libraries and in our own code, is
rewritten to `QwenCompanion._vendor.<name>`, so our copies never clash with
another package's copy of the same library in Sublime's shared plugin host.

Usage: python tools/build.py WHEEL_DIR DIST_DIR
"""

from __future__ import annotations

import re
import shutil
import sys
import zipfile
from pathlib import Path

PACKAGE_NAME = "QwenCompanion"
VENDOR_PREFIX = f"{PACKAGE_NAME}._vendor"
ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "QwenCompanion.sublime-package-src"
TOP_LEVEL_RESOURCES = ("Default.sublime-commands", "Main.sublime-menu")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache")

# attrs builds some methods from source text that imports itself by name.
_SPECIAL_CASES = {
    "__import__('attr._make')._make": f"__import__('{VENDOR_PREFIX}.attr._make', fromlist=['_make'])",
}


def vendored_names(vendor_dir: Path) -> list[str]:
    """Top-level importable names found in the unpacked wheels."""
    names = [
        p.name
        for p in vendor_dir.iterdir()
        if p.is_dir() and (p / "__init__.py").exists()
    ]
    names += [p.stem for p in vendor_dir.glob("*.py") if p.name != "__init__.py"]
    return sorted(names)


def import_rewriter(names: list[str]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    alternatives = "|".join(re.escape(n) for n in names)
    from_import = re.compile(rf"^(\s*)from\s+((?:{alternatives})(?:\.[\w.]+)?)\s+import\b", re.MULTILINE)
    plain_import = re.compile(
        rf"^(\s*)import\s+((?:{alternatives})(?:\.[\w.]+)?)(\s+as\s+\w+)?(?=[ \t]*(?:$|#|;))", re.MULTILINE
    )
    return from_import, plain_import


def module_path_strings(names: list[str]) -> re.Pattern[str]:
    """String literals naming an object as "module:attribute" for importlib
    (acp resolves deprecated names this way)."""
    alternatives = "|".join(re.escape(n) for n in names)
    return re.compile(rf"""(["'])((?:{alternatives})(?:\.\w+)*:\w+)\1""")


def rewrite_source(text: str, names: list[str]) -> str:
    from_import, plain_import = import_rewriter(names)
    text = module_path_strings(names).sub(lambda m: f"{m[1]}{VENDOR_PREFIX}.{m[2]}{m[1]}", text)
    text = from_import.sub(lambda m: f"{m[1]}from {VENDOR_PREFIX}.{m[2]} import", text)

    def plain(m: re.Match[str]) -> str:
        indent, dotted, alias = m[1], m[2], m[3]
        if alias:
            return f"{indent}import {VENDOR_PREFIX}.{dotted}{alias}"
        top = dotted.split(".", 1)[0]
        if "." in dotted:
            # `import a.b` binds `a` and guarantees `a.b` is loaded.
            return f"{indent}import {VENDOR_PREFIX}.{dotted}; from {VENDOR_PREFIX} import {top}"
        return f"{indent}from {VENDOR_PREFIX} import {top}"

    text = plain_import.sub(plain, text)
    for old, new in _SPECIAL_CASES.items():
        text = text.replace(old, new)
    return text


def unrewritten_imports(text: str, names: list[str]) -> list[str]:
    """Absolute imports of vendored names left in `text` (a build error)."""
    alternatives = "|".join(re.escape(n) for n in names)
    pattern = re.compile(rf"^\s*(?:from|import)\s+(?:{alternatives})\b.*$", re.MULTILINE)
    return pattern.findall(text)


def rewrite_tree(tree: Path, names: list[str]) -> None:
    problems: list[str] = []
    for path in tree.rglob("*.py"):
        original = path.read_text(encoding="utf-8")
        rewritten = rewrite_source(original, names)
        if rewritten != original:
            path.write_text(rewritten, encoding="utf-8")
        problems += [f"{path.relative_to(tree)}: {line.strip()}" for line in unrewritten_imports(rewritten, names)]
    if problems:
        raise SystemExit("build: imports the rewriter cannot handle:\n" + "\n".join(problems))


def unpack_wheels(wheel_dir: Path, vendor_dir: Path) -> None:
    wheels = sorted(wheel_dir.glob("*.whl"))
    if not wheels:
        raise SystemExit(f"build: no wheels in {wheel_dir}; run `make vendor` first")
    vendor_dir.mkdir(parents=True)
    (vendor_dir / "__init__.py").write_text('"""Third-party libraries shipped with the package (see vendor/requirements.txt)."""\n')
    for wheel in wheels:
        if not wheel.name.endswith("-py3-none-any.whl"):
            raise SystemExit(f"build: {wheel.name} is not a pure-Python wheel")
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(vendor_dir)


def build(wheel_dir: Path, dist_dir: Path) -> Path:
    target = dist_dir / PACKAGE_NAME
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(SOURCE, target, ignore=IGNORED)
    for name in TOP_LEVEL_RESOURCES:
        shutil.copy2(ROOT / name, target / name)
    # Package Control unpacks a package carrying this marker into Packages/.
    (target / ".no-sublime-package").write_text("")
    vendor_dir = target / "_vendor"
    unpack_wheels(wheel_dir, vendor_dir)
    names = vendored_names(vendor_dir)
    rewrite_tree(target, names)
    return target


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    target = build(Path(argv[1]), Path(argv[2]))
    print(f"built {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
