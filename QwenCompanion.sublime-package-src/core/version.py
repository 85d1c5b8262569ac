"""The package's version, written here and nowhere else.

`make release` reads it (tools/release.py) and refuses to pack a version that
messages.json and CHANGELOG.md do not describe; the MCP server and the chat
client report it to the CLI.
"""

VERSION = "0.1.0"
