"""What qwen offers an editor, in Sublime: Ask Aside, Summarize Conversation, New Chat from Summary, Session Status, follow-up suggestions."""
