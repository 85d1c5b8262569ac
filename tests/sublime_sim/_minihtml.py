"""The CSS minihtml draws: a property outside the minihtml Reference's list
(sublimetext.com/docs/minihtml.html, "CSS") is ignored by Sublime, so the
style the plugin meant never shows. The simulator fails the call instead."""

from __future__ import annotations

import re

_SIDES = ("", "-top", "-right", "-bottom", "-left")
SUPPORTED = frozenset(
    ["display", "position", "top", "right", "bottom", "left", "width", "height", "min-width", "max-width",
     "min-height", "max-height", "background-color", "color", "font-family", "font-size", "font-style",
     "font-weight", "line-height", "text-decoration", "text-align", "white-space", "list-style-type",
     "border-radius", "border-top-left-radius", "border-top-right-radius", "border-bottom-left-radius",
     "border-bottom-right-radius"]
    + [f"margin{side}" for side in _SIDES] + [f"padding{side}" for side in _SIDES]
    + [f"border{side}{part}" for side in _SIDES for part in ("", "-width", "-style", "-color")]
)

_STYLE_BLOCK = re.compile(r"<style[^>]*>(.*?)</style>", re.DOTALL | re.IGNORECASE)
_STYLE_ATTRIBUTE = re.compile(r"""\bstyle\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)
_DECLARATION = re.compile(r"(?:^|[{;])\s*(-?[a-zA-Z-]+)\s*:")


def unsupported_properties(content: str) -> list[str]:
    """The CSS properties of `content` (its <style> blocks and style="" attributes) minihtml ignores."""
    found: list[str] = []
    for css in _STYLE_BLOCK.findall(content):
        found += _DECLARATION.findall(re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL))
    for double, single in _STYLE_ATTRIBUTE.findall(content):
        found += _DECLARATION.findall(";" + (double or single))
    return [name for name in found if name.lower() not in SUPPORTED and not name.startswith("--")]


def check(content: str, where: str) -> None:
    unknown = unsupported_properties(content)
    if unknown:
        raise ValueError(f"{where}: minihtml has no CSS property {', '.join(sorted(set(unknown)))} "
                         "(see the minihtml Reference's CSS properties)")
