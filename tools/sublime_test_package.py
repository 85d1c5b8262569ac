"""Assemble the in-Sublime test suite as the package UnitTesting runs.

    python tools/sublime_test_package.py PACKAGES_DIR

writes PACKAGES_DIR/QwenCompanionTests/:

    unittesting.json          UnitTesting's settings (tests/sublime/unittesting.json)
    tests/__init__.py         so the tests import their helpers relatively
    tests/*.py                the suite (tests/sublime/*.py)
    tests/mcp_client.py       the CLI side of a review (tests/support/mcp_client.py)
    rig/*.py                  the scripted qwen (tests/rig/scripted_qwen.py, its two fakes and the helpers they import)

The suite tests the QwenCompanion package installed beside it; it is kept out
of the release asset. CI puts it into real Sublime Text's Packages folder, the
simulator's test into its simulated one.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST_PACKAGE = "QwenCompanionTests"
SUITE = ROOT / "tests" / "sublime"
SUPPORT = (ROOT / "tests" / "support" / "mcp_client.py",)
RIG = tuple(
    ROOT / "tests" / "rig" / name
    for name in ("scripted_qwen.py", "fake_acp_agent.py", "fake_stream_cli.py", "grandchild.py", "store_lock.py")
)


def assemble(packages_dir: Path) -> Path:
    target = packages_dir / TEST_PACKAGE
    if target.exists():
        shutil.rmtree(target)
    (target / "tests").mkdir(parents=True)
    (target / "rig").mkdir()
    shutil.copyfile(SUITE / "unittesting.json", target / "unittesting.json")
    (target / "tests" / "__init__.py").write_text("")
    for source in (*sorted(SUITE.glob("*.py")), *SUPPORT):
        shutil.copyfile(source, target / "tests" / source.name)
    for source in RIG:
        shutil.copyfile(source, target / "rig" / source.name)
    return target


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    print(f"assembled {assemble(Path(argv[1]))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
