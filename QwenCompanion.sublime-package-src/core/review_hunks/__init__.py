"""The one review view of every hunk: the hunks of a set of changed files, kept or undone one at a time."""
