"""The agent's requests in Sublime: reads and writes through the user's buffers, forms."""
