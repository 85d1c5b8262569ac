"""Review comments: the user's comments on lines of files, sent to a chat as one round (pure)."""
