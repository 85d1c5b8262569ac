"""minihtml as Sublime draws it (sublimetext.com/docs/minihtml.html).

What it shows of a string: the text, with every tag swallowed whether
minihtml knows it or not (`Vec<u8>` shows `Vec`), entities decoded, `<br>` a
line break, white space runs one space, and what `<style>` holds never shown;
and the links its `<a href>` tags make. Layout is not modelled.

The CSS it draws: a property outside the Reference's list ("CSS") is ignored
by Sublime, so the style the plugin meant never shows; the simulator fails
the call instead."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Rendered:
    text: str
    links: list[str] = field(default_factory=list)


class _Renderer(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.pieces: list[str] = []
        self.links: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "br":
            self.pieces.append("\n")
        elif tag == "style":
            self._in_style = True
        elif tag == "a":
            self.links.extend(value for name, value in attrs if name == "href" and value is not None)

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if not self._in_style:
            self.pieces.append(data)


def render(minihtml: str) -> Rendered:
    renderer = _Renderer()
    renderer.feed(minihtml)
    renderer.close()
    lines = ("".join(renderer.pieces)).split("\n")
    return Rendered("\n".join(re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in lines), renderer.links)




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
