"""The thin Sublime layer: listeners, commands and views on top of `core`."""
