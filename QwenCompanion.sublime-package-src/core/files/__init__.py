"""The user's files: the one write path on disk, how a file's bytes decode, line endings, paths, positions (pure)."""
