"""What a prompt carries: the editor's context, mentions, the queue (pure)."""
