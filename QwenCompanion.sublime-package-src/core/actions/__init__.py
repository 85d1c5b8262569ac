"""Quick actions on a selection (explain, docstring, optimize, fix, ask) as
one-shot runs of the CLI's stream-json mode."""
