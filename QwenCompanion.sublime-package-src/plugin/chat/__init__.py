"""The chat inside Sublime: views, composer and commands over core/chat."""
