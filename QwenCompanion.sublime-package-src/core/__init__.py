"""The editor-independent core: server, protocol, lock files, context, diffs.

Nothing in this package imports `sublime`, so it is tested without an editor.
"""
