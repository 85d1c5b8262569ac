"""Sublime's knowledge of the code and of the window as MCP tools for the
agent (`/ide-tools/mcp`): document symbols, definitions, type definitions,
diagnostics, references, hover, a project search, the open editors and
folders, showing a place, and the build's output."""

SERVER_NAME = "sublime-ide-tools"  # how the agent names these tools' server (the user's own servers may not take it)
