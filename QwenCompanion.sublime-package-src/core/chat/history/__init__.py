"""Earlier sessions and going back: history, branch, rewind, export, a turn's changes (pure)."""
