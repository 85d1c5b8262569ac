"""One write path: every change an agent causes to a user's file is made by
core/files/user_files.py (on disk) or plugin/view_writes.py (an open buffer),
which are called only after checking the file still holds what the agent
last saw or wrote. This scan fails when any other module of the package
writes, renames, removes or saves a file; the package's own state files are
listed below by name, each with where it lives."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "QwenCompanion.sublime-package-src"
WRITE_PATH = {"core/files/user_files.py", "plugin/view_writes.py"}
# The package's own files, never a user's: (module, what it calls) -> where the file lives.
OWN_FILES = {
    ("core/chat/history/store.py", "mkdir"): "the chats' sessions file in the package's cache folder",
    ("core/chat/history/store.py", "mkstemp"): "the chats' sessions file in the package's cache folder",
    ("core/chat/history/store.py", "fdopen"): "the chats' sessions file in the package's cache folder",
    ("core/chat/history/store.py", "replace"): "the chats' sessions file in the package's cache folder",
    ("core/companion/lockfile.py", "mkdir"): "the IDE lock file in the CLI's own folder (~/.qwen/ide)",
    ("core/companion/lockfile.py", "mkstemp"): "the IDE lock file in the CLI's own folder (~/.qwen/ide)",
    ("core/companion/lockfile.py", "fdopen"): "the IDE lock file in the CLI's own folder (~/.qwen/ide)",
    ("core/companion/lockfile.py", "replace"): "the IDE lock file in the CLI's own folder (~/.qwen/ide)",
    ("core/companion/lockfile.py", "unlink"): "the IDE lock file in the CLI's own folder (~/.qwen/ide)",
    ("core/companion/lockfile.py", "chmod"): "the IDE lock file in the CLI's own folder (~/.qwen/ide)",
    ("core/companion/gemini_discovery.py", "mkdir"): "gemini's discovery folder in the temp folder",
    ("core/companion/gemini_discovery.py", "unlink"): "gemini's discovery file in the temp folder",
    ("core/companion/companion.py", "unlink"): "the companion's own config file it wrote",
    ("plugin/chat/history/rewind_commands.py", "replace_text"): "the chat's composer, a view of the package's own",
    ("plugin/chat/comments/comment_commands.py", "replace_text"):
        "the chat's composer, a view of the package's own (Send Review takes its text)",
    ("plugin/chat/history/export_commands.py", "replace_text"): "the new scratch tab an export to a tab opens",
    ("plugin/chat/window_chats.py", "replace_text"): "the chat's composer: a prompt the agent could not take given back",
    ("core/chat/history/search_index.py", "fdopen"): "Search in Conversations' index in the package's cache folder (0600)",
    ("plugin/chat/offers/asides.py", "replace_text"): "a chat's Aside tab, a scratch tab of the package's own",
    ("plugin/chat/offers/status_panel.py", "replace_text"): "the Session Status output panel, the package's own",
    ("plugin/chat/history/export_commands.py", "open"): "a chat exported to the file the user picked in the save dialog",
    ("core/chat/history/search_index.py", "makedirs"): "Search in Conversations' index in the package's cache folder",
    ("core/chat/history/search_index.py", "O_WRONLY"): "Search in Conversations' index in the package's cache folder (0600)",
    ("core/chat/history/search_index.py", "O_CREAT"): "Search in Conversations' index in the package's cache folder (0600)",
    ("core/chat/history/search_index.py", "O_APPEND"): "Search in Conversations' index in the package's cache folder (0600)",
    ("core/chat/history/search_index.py", "O_TRUNC"): "Search in Conversations' index in the package's cache folder (0600)",
    ("core/chat/history/search_index.py", "fchmod"): "Search in Conversations' index in the package's cache folder (0600)",
    ("core/chat/history/search_index.py", "chmod"): "Search in Conversations' index's folder in the package's cache (0700)",
    ("core/chat/history/search_index.py", "replace"): "Search in Conversations' index in the package's cache folder",
    ("core/worktrees/worktrees.py", "makedirs"): "a repository's folder of worktrees, outside the project (worktrees_folder)",
    ("core/worktrees/worktrees.py", "rmtree"): "a worktree's folder git left half-made, which was not there before",
    ("core/serve/daemon.py", "mkdir"): "qwen serve's output file in the package's cache folder (0700)",
    ("core/serve/daemon.py", "O_WRONLY"): "qwen serve's output file in the package's cache folder (0600)",
    ("core/serve/daemon.py", "O_CREAT"): "qwen serve's output file in the package's cache folder (0600)",
    ("core/serve/daemon.py", "O_TRUNC"): "qwen serve's output file in the package's cache folder (0600)",
    ("core/serve/daemon.py", "unlink"): "qwen serve's record in the package's cache folder",
    ("core/serve/watchdog.py", "O_WRONLY"): "the serve watchdog's output file in the package's cache folder (0600)",
    ("core/serve/watchdog.py", "O_CREAT"): "the serve watchdog's output file in the package's cache folder (0600)",
    ("core/serve/watchdog.py", "O_APPEND"): "the serve watchdog's output file in the package's cache folder (0600)",
}
_OS_WRITES = {"replace", "rename", "renames", "unlink", "remove", "rmdir", "removedirs", "truncate", "ftruncate",
              "makedirs", "mkdir", "symlink", "link", "chmod", "fchmod", "chown", "utime", "mkfifo"}
# (Path.replace is left out: str.replace and dataclasses.replace share the name; os.replace is seen.)
_PATH_WRITES = {"write_text", "write_bytes", "unlink", "rename", "mkdir", "rmdir", "symlink_to", "hardlink_to",
                "chmod", "touch"}
_MODULE_WRITES = {"shutil": {"move", "rmtree", "copy", "copy2", "copyfile", "copytree", "copymode"},
                  "tempfile": {"mkstemp", "NamedTemporaryFile", "mkdtemp"}}
_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"}
_SAVES = {"save", "save_all", "revert"}
# The editor's whole-buffer replacement (plugin/editor.py): into a user's tab
# only through the write path. (A TextCommand's own `view.replace(edit, ...)`
# is not told from `str.replace` here; the package's are on its own views.)
_BUFFER_WRITES = {"replace_text"}


def _written_by(call: ast.Call) -> str | None:
    """The write primitive this call is, or None."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in _BUFFER_WRITES:
        return func.id
    opens = isinstance(func, ast.Name) and func.id == "open"
    opens_handle = isinstance(func, ast.Attribute) and func.attr == "fdopen"
    if opens or opens_handle:
        mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
        writes = not isinstance(mode, ast.Constant) or not isinstance(mode.value, str) or set(mode.value) & set("wax+")
        return ("open" if opens else "fdopen") if mode is not None and writes else None
    if not isinstance(func, ast.Attribute):
        return None
    owner = func.value.id if isinstance(func.value, ast.Name) else None
    if owner == "os":
        return func.attr if func.attr in _OS_WRITES else None
    if owner in _MODULE_WRITES:
        return func.attr if func.attr in _MODULE_WRITES[owner] else None
    if func.attr == "run_command" and call.args and isinstance(call.args[0], ast.Constant) \
            and call.args[0].value in _SAVES:
        return f"run_command({call.args[0].value!r})"
    if func.attr in _PATH_WRITES and owner != "session":  # a session's touch() marks it in use: no file
        return func.attr
    return None


def writes_outside_the_write_path(sources: Iterator[tuple[str, str]]) -> list[str]:
    found = []
    for name, text in sources:
        if name in WRITE_PATH:
            continue
        for node in ast.walk(ast.parse(text, name)):
            what = None
            if isinstance(node, ast.Call):
                what = _written_by(node)
            elif isinstance(node, ast.Attribute) and node.attr in _WRITE_FLAGS:
                what = node.attr
            if what is not None and (name, what) not in OWN_FILES and (name, what.split("(")[0]) not in OWN_FILES:
                found.append(f"{name}:{node.lineno} {what}")
    return found


def _package_sources() -> Iterator[tuple[str, str]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if not relative.startswith("vendor/"):
            yield relative, path.read_text(encoding="utf-8")


def test_no_module_but_the_write_path_writes_or_saves_a_file() -> None:
    assert writes_outside_the_write_path(_package_sources()) == []


def test_the_scan_finds_each_kind_of_write() -> None:
    samples = {
        'open(path, "w").write(text)': "open",
        "os.replace(temp, path)": "replace",
        "Path(path).write_bytes(data)": "write_bytes",
        "os.open(path, os.O_WRONLY)": "O_WRONLY",
        'view.run_command("save")': "run_command('save')",
        "shutil.move(a, b)": "move",
        "os.unlink(path)": "unlink",
        "replace_text(view, text)": "replace_text",
    }
    for code, what in samples.items():
        assert writes_outside_the_write_path(iter([("plugin/chat/history/turn_review.py", code)])) == [
            f"plugin/chat/history/turn_review.py:1 {what}"], code
    assert writes_outside_the_write_path(iter([("plugin/chat/history/turn_review.py", 'open(path, "rb")')])) == []


def test_every_listed_own_file_is_still_written_there() -> None:
    """A stale entry would let a later write slip through unseen."""
    sources = dict(_package_sources())
    for (name, what), _ in OWN_FILES.items():
        nodes = list(ast.walk(ast.parse(sources[name])))
        calls = [_written_by(n) for n in nodes if isinstance(n, ast.Call)]
        flags = [n.attr for n in nodes if isinstance(n, ast.Attribute) and n.attr in _WRITE_FLAGS]
        assert what in calls + flags, (name, what)
