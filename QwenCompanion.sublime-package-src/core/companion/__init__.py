"""The IDE companion: the MCP server a terminal qwen connects to, its protocol,
lock files, editor context and diff reviews."""
