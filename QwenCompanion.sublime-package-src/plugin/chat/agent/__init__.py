"""The chat's agent in Sublime: which one runs, its start, its daemon, Diagnose."""
