"""Sublime's code knowledge (symbols, definitions) answering the IDE tools."""
