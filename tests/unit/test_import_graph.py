"""No modules of the package import each other in a circle, directly or
through others, and no folders of it either (`core/companion` and
`core/ide_tools`, say): every import counts (top level, inside functions,
under TYPE_CHECKING), since each one ties the two together all the same."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "QwenCompanion.sublime-package-src"
SKIPPED = {"_vendor", "__pycache__"}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules(root: Path) -> dict[str, Path]:
    """Every module of the package by its dotted name inside it ("" is the package itself)."""
    return {
        module_name(path, root): path
        for path in sorted(root.rglob("*.py"))
        if not SKIPPED.intersection(path.relative_to(root).parts)
    }


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str | None:
    """The absolute name (inside the package) a relative import names; None for
    an absolute import, which leaves the package (it is imported by a relative one)."""
    if node.level == 0:
        return None
    base = importer.split(".") if importer else []
    if not is_package:
        base = base[:-1]
    up = node.level - 1
    if up > len(base):
        raise ValueError(f"{importer}: an import climbs out of the package")
    base = base[: len(base) - up] if up else base
    return ".".join([*base, *([node.module] if node.module else [])])


def resolve(importer: str, is_package: bool, node: ast.ImportFrom, modules: dict[str, Path]) -> set[str]:
    """The package's modules one `from` import in `importer` imports."""
    target = _resolve(importer, is_package, node)
    if target is None:
        return set()
    found = set()
    for alias in node.names:  # `from . import x` imports the module x when there is one
        submodule = f"{target}.{alias.name}" if target else alias.name
        found.add(submodule if submodule in modules else target)
    return {name for name in found if name in modules and name != importer}


def imports_of(importer: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that `importer` imports, wherever in it the import is."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom):
            found |= resolve(importer, is_package, node, modules)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    modules = package_modules(root)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> Iterator[list[str]]:
    """One circle per strongly connected group of modules (Tarjan), as a path
    that ends where it starts."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    for group in groups:
        yield _circle_in(sorted(group), graph)


def _circle_in(group: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest path from the group's first module back to itself."""
    members = set(group)
    start = group[0]
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for target in sorted(graph[node] & members):
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, start]
                if target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"no circle through {start}")


def folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The imports between the package's folders: a module of a folder stands
    for its whole folder (`core.chat.agent.stdio_bridge` for `core.chat`); a module at the
    top of `core/` or `plugin/` (a neutral home) stands for itself."""
    def folder(name: str) -> str:
        parts = name.split(".")
        return ".".join(parts[:2]) if len(parts) > 2 else name

    folders: dict[str, set[str]] = {}
    for name, targets in graph.items():
        folders.setdefault(folder(name), set()).update(folder(target) for target in targets)
    for name, targets in folders.items():
        targets.discard(name)
    return folders


def describe(circle: list[str]) -> str:
    return " -> ".join(name or "(package)" for name in circle)


def test_the_package_has_no_import_circle() -> None:
    found = [describe(circle) for circle in cycles(import_graph(SOURCE))]
    assert not found, "modules import each other in a circle:\n" + "\n".join(found)


def test_the_package_folders_have_no_import_circle() -> None:
    found = [describe(circle) for circle in cycles(folder_graph(import_graph(SOURCE)))]
    assert not found, "folders import each other in a circle:\n" + "\n".join(found)


def test_a_circle_is_found_and_printed(tmp_path: Path) -> None:
    """The check itself: a circle through a function-level import and one
    under TYPE_CHECKING, with relative imports of every form."""
    (tmp_path / "core").mkdir()
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "core" / "__init__.py").write_text("")
    (tmp_path / "core" / "a.py").write_text("from .b import thing\n")
    (tmp_path / "core" / "b.py").write_text("def f() -> None:\n    from ..plugin import c\n")
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "__init__.py").write_text("")
    (tmp_path / "plugin" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..core import a\n"
    )
    (tmp_path / "plugin" / "d.py").write_text("from . import c\nimport json\n")
    graph = import_graph(tmp_path)
    assert graph["plugin.d"] == {"plugin.c"}
    assert [describe(circle) for circle in cycles(graph)] == ["core.a -> core.b -> plugin.c -> core.a"]
    assert [describe(circle) for circle in cycles(folder_graph(graph))] == ["core.a -> core.b -> plugin.c -> core.a"]


def test_a_circle_between_folders_is_found(tmp_path: Path) -> None:
    for folder in ("core", "core/companion", "core/ide_tools"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "core" / "companion" / "companion.py").write_text("from ..ide_tools.tools import x\n")
    (tmp_path / "core" / "companion" / "server.py").write_text("from ..json_types import JsonObject\n")
    (tmp_path / "core" / "ide_tools" / "tools.py").write_text("from ..companion.server import y\n")
    (tmp_path / "core" / "json_types.py").write_text("")
    graph = import_graph(tmp_path)
    assert list(cycles(graph)) == []  # no module circle ...
    assert [describe(circle) for circle in cycles(folder_graph(graph))] == [
        "core.companion -> core.ide_tools -> core.companion"  # ... but one between the folders
    ]


def test_no_circle_without_a_back_edge(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "a.py").write_text("from . import b\n")
    (tmp_path / "b.py").write_text("from .c import x\n")
    (tmp_path / "c.py").write_text("x = 1\n")
    assert list(cycles(import_graph(tmp_path))) == []


def imports_into(graph: dict[str, set[str]], importer: str, imported: str) -> list[str]:
    """Every import of a module of folder `importer` from one of folder `imported`."""
    def inside(name: str, folder: str) -> bool:
        return name == folder or name.startswith(folder + ".")

    return sorted(
        f"{name} -> {target}"
        for name, targets in graph.items() if inside(name, importer)
        for target in targets if inside(target, imported)
    )


def test_the_chat_core_imports_nothing_of_the_companion() -> None:
    """The chat and the CLI's companion share the review model and the context
    rules through the pure core (core/reviews.py, core/context_rules.py),
    never through the companion's MCP server and protocol models."""
    found = imports_into(import_graph(SOURCE), "core.chat", "core.companion")
    assert not found, "core/chat imports core/companion:\n" + "\n".join(found)


def test_imports_into_a_folder_are_found_wherever_they_are(tmp_path: Path) -> None:
    for folder in ("core", "core/chat", "core/companion"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "core" / "chat" / "prompt.py").write_text("def f() -> None:\n    from ..companion.rules import x\n")
    (tmp_path / "core" / "chat" / "types.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..companion import rules\n"
    )
    (tmp_path / "core" / "chat" / "pure.py").write_text("from ..rules import y\n")
    (tmp_path / "core" / "companion" / "rules.py").write_text("")
    (tmp_path / "core" / "companion" / "server.py").write_text("from ..chat.pure import z\n")
    (tmp_path / "core" / "rules.py").write_text("")
    assert imports_into(import_graph(tmp_path), "core.chat", "core.companion") == [
        "core.chat.prompt -> core.companion.rules", "core.chat.types -> core.companion.rules"
    ]


def test_what_every_feature_shares_imports_nothing_of_the_chat() -> None:
    """The file reads (core/files/), finding a CLI (core/cli/) and the write
    path's buffer side (plugin/view_writes.py) serve the quick actions, the
    IDE tools and the worktrees as much as the chat: they live outside it."""
    graph = import_graph(SOURCE)
    found = [edge for shared in ("core.files", "core.cli", "plugin.view_writes")
             for chat in ("core.chat", "plugin.chat") for edge in imports_into(graph, shared, chat)]
    assert not found, "a shared module imports the chat:\n" + "\n".join(found)
