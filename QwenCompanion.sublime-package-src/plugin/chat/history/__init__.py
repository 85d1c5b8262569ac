"""Chat History, Branch, Rewind, Export, Continue in Terminal and a turn's changes."""
