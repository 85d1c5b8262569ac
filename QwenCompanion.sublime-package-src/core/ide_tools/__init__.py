"""Sublime's knowledge of the code as MCP tools for the agent: document
symbols, definitions, type definitions and diagnostics (`/ide-tools/mcp`)."""
