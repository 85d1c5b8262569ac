"""Git worktrees a chat's agent works in, their changes and Apply (a three-way merge) (pure)."""
