"""The chat's agent: its command line, process, ACP connection and session options (pure)."""
