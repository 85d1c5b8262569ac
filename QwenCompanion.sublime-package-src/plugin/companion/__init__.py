"""The IDE companion in Sublime: server lifecycle, context listener, terminal, status."""
