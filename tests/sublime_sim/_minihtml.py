"""What Sublime shows of a minihtml string (sublimetext.com/docs/minihtml.html):
the text, with every tag swallowed whether minihtml knows it or not
(`Vec<u8>` shows `Vec`), entities decoded, `<br>` a line break, white space
runs one space, and what `<style>` holds never shown; and the links its
`<a href>` tags make. Layout and CSS are not modelled."""

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
