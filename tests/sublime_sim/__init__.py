"""A simulated Sublime Text host for testing packages without Sublime Text.

``SimulatedHost`` runs fake ``sublime`` / ``sublime_plugin`` modules modelled
on the API reference, a ``Packages`` folder, and the plugin host's main and
worker threads; ``host.user`` performs user actions. See ``host.py``.
"""

from ._keymap import Binding
from ._records import CommandRecord, DialogAnswers, DialogRecord, ErrorRecord
from .host import SimulatedHost, install_modules

__all__ = [
    "Binding",
    "CommandRecord",
    "DialogAnswers",
    "DialogRecord",
    "ErrorRecord",
    "SimulatedHost",
    "install_modules",
]
