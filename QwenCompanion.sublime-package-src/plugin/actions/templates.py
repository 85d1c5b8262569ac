"""The quick actions' prompt templates: the user's copy first, else the package's."""

from __future__ import annotations

import sublime

PACKAGE = __package__.split(".")[0] if __package__ else "QwenCompanion"


def load_template(name: str) -> str:
    """The prompt template `name`: the user's copy in Packages/User/QwenCompanion/prompts
    when there is one, else the package's."""
    for resource in (f"Packages/User/{PACKAGE}/prompts/{name}.md", f"Packages/{PACKAGE}/prompts/{name}.md"):
        try:
            return sublime.load_resource(resource)
        except OSError:
            continue
    raise FileNotFoundError(f"no prompt template {name}.md")
