"""The import gate (see plugin/__init__.py): what Sublime imports at start-up
needs none of the runtime libraries, and an import waits inside a function
only when the module it imports needs them."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from .test_import_graph import SOURCE, package_modules, resolve

GATED_LIBRARIES = frozenset({"pydantic", "pydantic_core", "aiohttp", "acp", "mcp_types"})
# Function-level imports of the standard library, each for a reason of its own.
LOCAL_LIBRARIES = {
    "ctypes": "about 2 ms to import, never paid at plugin load (core/memory.py, the Windows pid check)",
    "pwd": "POSIX only",
}


def _top_level(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports that run with the module (under TYPE_CHECKING: never)."""
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.Try):
            yield from (n for n in node.body if isinstance(n, (ast.Import, ast.ImportFrom)))


def _in_functions(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    yield node


def _libraries(node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name.split(".")[0] for alias in node.names}
    return {node.module.split(".")[0]} if node.level == 0 and node.module else set()


class Package:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules = package_modules(root)
        self.trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in self.modules.items()}
        self._gated: dict[str, bool] = {}

    def targets(self, name: str, node: ast.Import | ast.ImportFrom) -> set[str]:
        """The package's modules `node` (in module `name`) imports."""
        if not isinstance(node, ast.ImportFrom):
            return set()
        return resolve(name, self.modules[name].name == "__init__.py", node, self.modules)

    def loaded_with(self, name: str) -> set[str]:
        """`name` and every module its top-level imports load."""
        seen: set[str] = set()
        pending = [name]
        while pending:
            module = pending.pop()
            if module not in seen:
                seen.add(module)
                for node in _top_level(self.trees[module]):
                    pending.extend(self.targets(module, node))
        return seen

    def needs_gated_library(self, name: str) -> bool:
        if name not in self._gated:
            self._gated[name] = any(
                _libraries(node) & GATED_LIBRARIES
                for module in self.loaded_with(name)
                for node in _top_level(self.trees[module])
            )
        return self._gated[name]

    def ungated_imports(self) -> list[str]:
        """Function-level imports that need no gate: they belong at the top."""
        found = []
        for name, tree in self.trees.items():
            for node in _in_functions(tree):
                libraries = _libraries(node)
                if libraries & GATED_LIBRARIES or (libraries and libraries <= LOCAL_LIBRARIES.keys()):
                    continue
                if libraries or not any(self.needs_gated_library(t) for t in self.targets(name, node)):
                    found.append(f"{self.modules[name].relative_to(self.root)}:{node.lineno}: {ast.unparse(node)}")
        return found


def test_start_up_imports_none_of_the_runtime_libraries() -> None:
    package = Package(SOURCE)
    needing = sorted(name for name in package.loaded_with("boot") if package.needs_gated_library(name))
    assert not needing, f"boot.py loads modules that need {sorted(GATED_LIBRARIES)} at start-up: {needing}"


def test_the_review_model_and_the_context_rules_need_none_of_the_runtime_libraries() -> None:
    """The plugin layer imports them at the top of its modules: what a review
    is, a file read for one and what of the editor may leave it need no models."""
    package = Package(SOURCE)
    assert [name for name in ("core.reviews", "core.context_rules") if package.needs_gated_library(name)] == []


def test_what_every_feature_shares_needs_none_of_the_runtime_libraries() -> None:
    """The file reads, finding a CLI and the write path's buffer side are
    imported at the top of the quick actions', the IDE tools' and the chat's
    modules alike."""
    package = Package(SOURCE)
    shared = ("core.files.agent_files", "core.cli.cli_command", "plugin.view_writes")
    assert [name for name in shared if package.needs_gated_library(name)] == []


def test_imports_wait_in_functions_only_at_the_gate() -> None:
    found = Package(SOURCE).ungated_imports()
    assert not found, "imports inside functions that need no gate (move them to the top):\n" + "\n".join(found)


def test_the_gate_check_sees_both_faults(tmp_path: Path) -> None:
    (tmp_path / "core").mkdir()
    (tmp_path / "plugin").mkdir()
    for folder in (tmp_path, tmp_path / "core", tmp_path / "plugin"):
        (folder / "__init__.py").write_text("")
    (tmp_path / "core" / "models.py").write_text("import pydantic\n")
    (tmp_path / "core" / "pure.py").write_text("import os\n")
    (tmp_path / "plugin" / "ok.py").write_text("def f() -> None:\n    from ..core.models import x\n")
    (tmp_path / "plugin" / "lazy.py").write_text("def f() -> None:\n    from ..core import pure\n")
    (tmp_path / "plugin" / "eager.py").write_text("from ..core.models import x\n")
    (tmp_path / "boot.py").write_text("from .plugin import ok, lazy, eager\n")
    package = Package(tmp_path)
    assert sorted(n for n in package.loaded_with("boot") if package.needs_gated_library(n)) == [
        "boot", "core.models", "plugin.eager"
    ]
    assert [line.split(": ", 1)[1] for line in package.ungated_imports()] == ["from ..core import pure"]
