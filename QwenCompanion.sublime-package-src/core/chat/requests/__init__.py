"""What the agent asks of the editor: file reads and writes, permissions, forms (pure)."""
