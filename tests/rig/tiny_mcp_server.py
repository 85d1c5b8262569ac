"""A tiny stdio MCP server for the tests (the `mcp` SDK): one tool, `echo_marker`,
whose answer carries a marker (argv[1], default "tiny-mcp-answer") and the
text it was given, so a test can find it in the model's next request. It
writes a line to stderr at start, as real servers do."""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

MARKER = sys.argv[1] if len(sys.argv) > 1 else "tiny-mcp-answer"
server = MCPServer("tiny")


@server.tool()
def echo_marker(text: str) -> str:
    """Answer the given text with this server's marker."""
    return f"{MARKER}: {text}"


if __name__ == "__main__":
    print("tiny MCP server starting", file=sys.stderr, flush=True)
    server.run()
