"""Fixtures for tests running on the simulated Sublime host (tests/sublime_sim)."""

from tests.sublime_sim.fixtures import packages_dir, sim_host  # noqa: F401
