"""Chats in git worktrees: creation, review and Apply."""
