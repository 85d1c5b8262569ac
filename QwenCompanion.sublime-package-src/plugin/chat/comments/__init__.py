"""Review comments in the editor: their marks in every view of their file, and their commands."""
