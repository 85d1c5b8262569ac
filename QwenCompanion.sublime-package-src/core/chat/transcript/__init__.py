"""The transcript: blocks of text, how the agent's updates become them, streamed (pure)."""
