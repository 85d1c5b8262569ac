"""Quick actions on a selection: commands, the answer view and proposals."""
