"""The IDE tools a remote CLI calls through the remote endpoint
(`MappedKnowledge`, core/companion/remote.py): the newer tools too take the
CLI's paths made local and answer under its paths, both ways, with what it
cannot see left out and a path outside its folders refused."""

from __future__ import annotations

from typing import Any

import pytest

from qwencompanion_src.core.cli.path_maps import PathMap, PathTranslator
from qwencompanion_src.core.companion.remote import MappedKnowledge
from qwencompanion_src.core.ide_tools.answers import Place, SearchRequest, ToolRefusal

LOCAL, REMOTE, LIBRARY = "/home/me/app", "/workspaces/app", "/usr/lib/python3/shelf.py"


class LocalKnowledge:
    """The editor's answers, in local paths, and what it was asked."""

    def __init__(self) -> None:
        self.asked: list[Any] = []

    def workspace_folders(self) -> dict[str, Any]:
        return {"folders": [{"abspath": LOCAL}, {"abspath": "/home/me/private"}],
                "project_file": {"abspath": f"{LOCAL}/app.sublime-project"}}

    def open_editors(self) -> dict[str, Any]:
        return {"editors": [{"abspath": f"{LOCAL}/main.py", "dirty": True}, {"abspath": LIBRARY, "dirty": False}]}

    def open_file(self, place: Place) -> dict[str, Any]:
        self.asked.append(place)
        return {"shown": {"abspath": place.path}}

    def references(self, symbol: str | None, place: Place | None) -> dict[str, Any]:
        self.asked.append(place)
        return {"references": [{"abspath": f"{LOCAL}/shelf.py", "line": 2}, {"abspath": LIBRARY, "line": 9}]}

    def search(self, request: SearchRequest) -> str:
        self.asked.append(request)
        return "main.py:5:13: shelf = Shelf()"


def mapped() -> tuple[MappedKnowledge, LocalKnowledge]:
    local = LocalKnowledge()
    translator = PathTranslator([PathMap(LOCAL, REMOTE)], [LOCAL])
    return MappedKnowledge(local, lambda: translator), local  # type: ignore[arg-type]


def test_the_newer_tools_answer_under_the_remote_clis_paths_and_leave_out_what_it_cannot_see() -> None:
    knowledge, local = mapped()
    assert knowledge.workspace_folders() == {"folders": [{"abspath": REMOTE}],
                                             "project_file": {"abspath": f"{REMOTE}/app.sublime-project"}}
    assert knowledge.open_editors() == {"editors": [{"abspath": f"{REMOTE}/main.py", "dirty": True}]}
    assert knowledge.references(None, Place(f"{REMOTE}/main.py", 5, 13)) == {
        "references": [{"abspath": f"{REMOTE}/shelf.py", "line": 2}]}
    assert knowledge.open_file(Place(f"{REMOTE}/main.py", 3)) == {"shown": {"abspath": f"{REMOTE}/main.py"}}
    assert knowledge.search(SearchRequest("Shelf")) == "main.py:5:13: shelf = Shelf()"  # relative to the folder
    assert [p.path for p in local.asked if isinstance(p, Place)] == [f"{LOCAL}/main.py", f"{LOCAL}/main.py"]


def test_a_path_outside_the_remote_clis_folders_is_refused_before_the_editor_is_asked() -> None:
    knowledge, local = mapped()
    with pytest.raises(ToolRefusal, match="not inside the editor's folders as this CLI sees them"):
        knowledge.open_file(Place("/etc/passwd", 1))
    assert local.asked == []
