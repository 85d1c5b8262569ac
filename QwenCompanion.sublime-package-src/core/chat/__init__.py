"""The chat: an Agent Client Protocol client for `qwen --acp` (pure, no `sublime`)."""
