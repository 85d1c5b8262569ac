"""The composer: its keys, attachments, mentions, slash commands and the queue."""
