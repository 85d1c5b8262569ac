"""Starting a CLI: its command line in a terminal or elsewhere (WSL, a container, SSH), its paths there, its process group (pure)."""
