"""Fixtures for tests running on the simulated Sublime host (tests/sublime_sim)."""

# Fixtures shared by several test modules are imported here, where pytest
# finds them for every module of the folder.
from tests.sim.test_chat import rig  # noqa: F401
from tests.sublime_sim.fixtures import packages_dir, sim_host  # noqa: F401
from tests.support.desktop import desktop_tools  # noqa: F401  (no test pops a desktop notification)
from tests.support.processes import grandchildren  # noqa: F401
