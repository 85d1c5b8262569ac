"""`make bench`: the package against a peer on the VS Code companion's stack (see run.py)."""
