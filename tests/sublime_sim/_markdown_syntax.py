"""The structure of Sublime's Markdown syntax (build 4205) that a syntax
extending it depends on, written out as facts (not a copy of the file):

* ``version: 2``; scope ``text.html.markdown``.
* ``main`` only includes ``frontmatter`` and then ``set``s to ``markdown``,
  so rules prepended to ``main`` are tried at the very start of the file only.
* ``markdown`` is the block-level context every line starts in: it tries
  (among others) fenced code blocks, then ATX headings, then paragraphs.
* An ATX heading ``## x`` pushes ``atx-heading2-content``: meta scope
  ``markup.heading.2.markdown``, the text ``entity.name.section.markdown``,
  the opening hashes ``punctuation.definition.heading.begin.markdown``; the
  end of the line pops it.
* A paragraph is ``meta.paragraph.markdown``.
"""

from __future__ import annotations

from typing import Any

PATH = "Packages/Markdown/Markdown.sublime-syntax"


def _atx_heading(level: int) -> dict[str, Any]:
    return {
        "match": f"[ \\t]*(#{{{level}}})" + "{{atx_heading_space}}",
        "captures": {1: "punctuation.definition.heading.begin.markdown"},
        "push": f"atx-heading{level}-content",
    }


def _atx_content(level: int) -> list[dict[str, Any]]:
    return [
        {"meta_scope": f"markup.heading.{level}.markdown"},
        {"meta_content_scope": "entity.name.section.markdown"},
        {"include": "atx-heading-content"},
    ]


MARKDOWN: dict[str, Any] = {
    "name": "Markdown",
    "scope": "text.html.markdown",
    "version": 2,
    "file_extensions": ["md", "mdown", "mdwn", "markdown", "markdn"],
    "variables": {
        "atx_heading_space": "(?:(?=[ \\t]+#+[ \\t]*$)|[ \\t]+|$)",
        "atx_heading_end": "(?:[ \\t]+(#+))?[ \\t]*($\\n?)",
    },
    "contexts": {
        "main": [{"include": "frontmatter"}, {"match": "", "set": "markdown"}],
        "frontmatter": [
            {"match": "(---)\\s*\\n", "captures": {1: "punctuation.section.frontmatter.begin.markdown"}, "push": "frontmatter-body"},
        ],
        "frontmatter-body": [
            {"meta_scope": "meta.frontmatter.markdown"},
            {"match": "^(---|\\.{3})\\s*\\n", "pop": 1},
        ],
        "markdown": [
            {"include": "fenced-code-blocks"},
            {"include": "atx-headings"},
            {"include": "paragraphs"},
        ],
        "fenced-code-blocks": [
            {"match": "^[ \\t]*(`{3,}|~{3,})[^\\n]*\\n", "captures": {1: "punctuation.definition.raw.code-fence.begin.markdown"},
             "push": "fenced-code-block-body"},
        ],
        "fenced-code-block-body": [
            {"meta_scope": "meta.code-fence.definition.markdown"},
            {"match": "^[ \\t]*(`{3,}|~{3,})[ \\t]*$\\n?", "captures": {1: "punctuation.definition.raw.code-fence.end.markdown"}, "pop": 1},
        ],
        "atx-headings": [_atx_heading(level) for level in range(1, 7)],
        **{f"atx-heading{level}-content": _atx_content(level) for level in range(1, 7)},
        "atx-heading-content": [
            {"match": "{{atx_heading_end}}", "captures": {1: "punctuation.definition.heading.end.markdown"}, "pop": 1},
        ],
        "paragraphs": [{"match": "(?=\\S)", "push": "paragraph"}],
        "paragraph": [
            {"meta_scope": "meta.paragraph.markdown"},
            {"match": "$\\n?", "pop": 1},
        ],
    },
}
