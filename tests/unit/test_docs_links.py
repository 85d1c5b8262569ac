"""The links of README.md and docs/*.md lead somewhere.

Package Control shows README.md as the package's page, where a relative link
breaks (it is not served from the repository): the README links to the
repository's own files through its public URL (repository.json's `details`)
and to its own headings by anchor. The pages in docs/ are read on the
repository host, where relative links work. Anchors follow the host's rule for
heading ids: the heading's text, lower case, without punctuation, spaces as
dashes, a repeated one numbered. External sites are not fetched.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
DEFAULT_BRANCH = "main"

FENCED_BLOCK = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
INDENTED_BLOCK = re.compile(r"(?:^\n)((?: {4}.*\n)+)", re.MULTILINE)
CODE_SPAN = re.compile(r"(`+).+?\1", re.DOTALL)
LINK = re.compile(r"\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^()\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _prose(text: str) -> str:
    """The text without its code, where brackets are not links."""
    text = FENCED_BLOCK.sub("", text)
    text = INDENTED_BLOCK.sub("\n", text)
    return CODE_SPAN.sub("code", text)


def _anchor(heading: str) -> str:
    shown = LINK.sub(r"\1", heading).replace("`", "")
    shown = re.sub(r"[*_]{1,3}(\S.*?\S|\S)[*_]{1,3}", r"\1", shown)
    return re.sub(r"[^\w\- ]", "", shown.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCED_BLOCK.sub("", path.read_text(encoding="utf-8"))
    seen: Counter[str] = Counter()
    found = set()
    for heading in HEADING.findall(text):
        base = _anchor(heading)
        found.add(base if seen[base] == 0 else f"{base}-{seen[base]}")
        seen[base] += 1
    return found


def links(path: Path) -> list[str]:
    return [target for _, target in LINK.findall(_prose(path.read_text(encoding="utf-8")))]


def repository_url() -> str:
    details: str = json.loads((ROOT / "repository.json").read_text())["packages"][0]["details"]
    return details.rstrip("/")


def _missing_target(page: Path, file: Path, anchor: str) -> str | None:
    if not file.exists():
        return f"{page.name}: {file.relative_to(ROOT)} does not exist"
    if anchor and file.suffix == ".md" and anchor not in anchors(file):
        return f"{page.name}: no heading #{anchor} in {file.relative_to(ROOT)}"
    return None


def broken_links(page: Path) -> list[str]:
    """The links of `page` that lead nowhere; relative ones are broken in the README."""
    in_repository = f"{repository_url()}/blob/{DEFAULT_BRANCH}/"
    broken = []
    for target in links(page):
        location, _, anchor = target.partition("#")
        if target.startswith(in_repository):
            problem = _missing_target(page, ROOT / location[len(in_repository):], anchor)
        elif re.match(r"[a-z]+:", target):
            continue  # another site, or mailto:
        elif not location:
            problem = None if anchor in anchors(page) else f"{page.name}: no heading #{anchor}"
        elif page == README:
            problem = f"README.md: relative link {target} (broken on Package Control's page)"
        else:
            problem = _missing_target(page, (page.parent / location).resolve(), anchor)
        if problem:
            broken.append(problem)
    return broken


def test_every_link_of_the_readme_and_the_docs_leads_somewhere() -> None:
    pages = [README, *sorted(DOCS.glob("*.md"))]
    assert len(pages) > 1
    assert [problem for page in pages for problem in broken_links(page)] == []


def test_every_docs_page_is_reached_from_the_readme() -> None:
    reached: set[Path] = set()
    pending = [README]
    while pending:
        page = pending.pop()
        for target in links(page):
            location = target.partition("#")[0]
            prefix = f"{repository_url()}/blob/{DEFAULT_BRANCH}/"
            if location.startswith(prefix):
                found = ROOT / location[len(prefix):]
            elif location and not re.match(r"[a-z]+:", location):
                found = (page.parent / location).resolve()
            else:
                continue
            if found.suffix == ".md" and found not in reached and found.exists():
                reached.add(found)
                pending.append(found)
    assert sorted(DOCS.glob("*.md")) == sorted(p for p in reached if p.parent == DOCS)


def test_the_anchor_rule_matches_headings_with_code_and_punctuation() -> None:
    assert _anchor('Diffs need `tools.approvalMode: "default"`') == "diffs-need-toolsapprovalmode-default"
    assert _anchor("Windows and macOS") == "windows-and-macos"
    assert _anchor("The CLIs it serves") == "the-clis-it-serves"
