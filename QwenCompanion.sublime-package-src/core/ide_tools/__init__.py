"""Sublime's knowledge of the code and of the window as MCP tools for the
agent (`/ide-tools/mcp`): document symbols, definitions, type definitions,
diagnostics, references, hover, a project search, the open editors and
folders, showing a place, and the build's output."""
