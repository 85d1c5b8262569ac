"""The review view of every hunk: a set of changes shown hunk by hunk, each kept or undone."""
