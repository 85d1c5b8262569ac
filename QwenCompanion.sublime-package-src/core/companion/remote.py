"""The remote endpoint: a second server of a window, for a CLI that runs
elsewhere (WSL, a container, over SSH) and names the window's files by other
paths (`core.cli.path_maps`).

It listens on 127.0.0.1 like the local one (a container reaches it through
`host.docker.internal`, SSH through `ssh -R`, WSL through its localhost
forwarding), with a token of its own, and every path crossing it is
translated: the context it sends, the paths openDiff / closeDiff name and the
ones the decisions go back with, and the IDE tools' arguments and answers
(`MappedKnowledge`). A path that maps outside the window's folders is refused.

Its lock file is not written into the local `~/.qwen/ide`: a local CLI would
find a workspace it cannot connect to. It is kept, 0600, in a folder of the
package's for the connect command to hand over on stdin (see
`core.cli.remote_connect`), and holds no `ppid`: the CLI there deletes a lock file
whose pid it cannot see.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import threads
from ..cli.path_maps import PathTranslator
from ..cli.remote_connect import HOST_PLACEHOLDER
from ..ide_tools.answers import CodeKnowledge, Place, SearchRequest, ToolRefusal
from ..json_types import JsonObject
from . import lockfile
from .diff_tools import DiffBackend
from .ide_messages import CloseDiffArguments, DiffAccepted, DiffRejected, IdeContext, OpenDiffArguments, Outgoing
from .ide_tools_mcp import IDE_TOOLS_PATH, mcp_config
from .protocol import ToolAnswer, text_result

# The names a remote CLI puts in its Host header: its own loopback (SSH's and
# WSL's forwards keep the port) and Docker's name for the host.
REMOTE_HOSTS = ("127.0.0.1", "localhost", "host.docker.internal")

Translator = Callable[[], PathTranslator]


def outside_message(path: str) -> str:
    return (f"{path} is not inside the editor's folders as this CLI sees them "
            "(the path_maps setting says which folders it sees, and where)")


class MappedDiffBackend:
    """openDiff / closeDiff of a remote CLI: its paths made local (or refused)
    before the editor's backend sees them."""

    def __init__(self, backend: DiffBackend, translator: Translator) -> None:
        self._backend = backend
        self._translator = translator

    @threads.on_server_loop
    async def open_diff(self, session_id: str, arguments: OpenDiffArguments) -> ToolAnswer:
        local = self._translator().to_local(arguments.filePath)
        if local is None:
            return text_result(outside_message(arguments.filePath), is_error=True)
        return await self._backend.open_diff(session_id, arguments.model_copy(update={"filePath": local}))

    @threads.on_server_loop
    async def close_diff(self, session_id: str, arguments: CloseDiffArguments) -> ToolAnswer:
        local = self._translator().to_local(arguments.filePath)
        if local is None:
            return text_result(outside_message(arguments.filePath), is_error=True)
        return await self._backend.close_diff(session_id, arguments.model_copy(update={"filePath": local}))


class MappedKnowledge:
    """The IDE tools of a remote CLI: the file it names made local (or refused)
    before the editor's knowledge answers, every `abspath` of the answer named
    as the CLI names it, and what it cannot see left out."""

    def __init__(self, knowledge: CodeKnowledge, translator: Translator) -> None:
        self._knowledge = knowledge
        self._translator = translator

    def _local(self, abspath: str) -> str:
        local = self._translator().to_local(abspath)
        if local is None:
            raise ToolRefusal(outside_message(abspath))
        return local

    def _answer(self, answer: JsonObject) -> JsonObject:
        return remote_answer(answer, self._translator())

    def document_symbols(self, abspath: str) -> JsonObject:
        return self._answer(self._knowledge.document_symbols(self._local(abspath)))

    def definitions(self, abspath: str, line: int, character: int) -> JsonObject:
        return self._answer(self._knowledge.definitions(self._local(abspath), line, character))

    def type_definitions(self, abspath: str, line: int, character: int) -> JsonObject:
        return self._answer(self._knowledge.type_definitions(self._local(abspath), line, character))

    def diagnostics(self, abspath: str | None) -> JsonObject:
        return self._answer(self._knowledge.diagnostics(None if abspath is None else self._local(abspath)))

    def _place(self, place: Place) -> Place:
        """A place whose path is absolute made local; a relative one is the folders' own."""
        if not place.path.startswith("/") and ":" not in place.path[:3]:
            return place
        return Place(self._local(place.path), place.line, place.column, place.end_line)

    def search(self, request: SearchRequest) -> str:
        return self._knowledge.search(request)  # its paths are relative to the folders

    def references(self, symbol: str | None, place: Place | None) -> JsonObject:
        return self._answer(self._knowledge.references(symbol, None if place is None else self._place(place)))

    def hover(self, place: Place) -> JsonObject:
        return self._answer(self._knowledge.hover(self._place(place)))

    def open_editors(self) -> JsonObject:
        return self._answer(self._knowledge.open_editors())

    def workspace_folders(self) -> JsonObject:
        return self._answer(self._knowledge.workspace_folders())

    def open_file(self, place: Place) -> JsonObject:
        return self._answer(self._knowledge.open_file(self._place(place)))

    def build_output(self) -> JsonObject:
        return self._answer(self._knowledge.build_output())


def remote_answer(answer: JsonObject, translator: PathTranslator) -> JsonObject:
    """`answer` with each `abspath` under its remote name; an object in a list
    whose file has none (a definition in a library outside the folders) is
    left out, so no local path reaches the remote CLI."""
    mapped = _remote_value(answer, translator)
    if not isinstance(mapped, dict):  # only an answer whose own abspath has no remote name
        raise ToolRefusal("the answer names a file outside the folders this CLI sees")
    return mapped


def _remote_value(value: Any, translator: PathTranslator) -> Any:
    """`value` with its paths remote; None for an object naming a file the CLI cannot see."""
    if isinstance(value, list):
        items = (_remote_value(item, translator) for item in value)
        return [item for item in items if item is not None]
    if not isinstance(value, dict):
        return value
    mapped: JsonObject = {}
    for key, item in value.items():
        if key == "abspath" and isinstance(item, str):
            remote = translator.to_remote(item)
            if remote is None:
                return None
            mapped[key] = remote
        else:
            mapped[key] = _remote_value(item, translator)
    return mapped


def remote_context(context: IdeContext, translator: PathTranslator) -> IdeContext:
    """`context` with each open file named as the remote CLI names it; files it
    cannot see are left out."""
    state = context.workspaceState
    if state is None or not state.openFiles:
        return context
    files = []
    for entry in state.openFiles:
        path = translator.to_remote(entry.path)
        if path is not None:
            files.append(entry.model_copy(update={"path": path}))
    return context.model_copy(update={"workspaceState": state.model_copy(update={"openFiles": files})})


def remote_params(params: Outgoing, translator: PathTranslator) -> Outgoing | None:
    """A notification's parameters as the remote CLI must get them (the decision
    on a file under its own name); None when the file has no remote name."""
    if isinstance(params, IdeContext):
        return remote_context(params, translator)
    if isinstance(params, (DiffAccepted, DiffRejected)):
        path = translator.to_remote(params.filePath)
        return None if path is None else params.model_copy(update={"filePath": path})
    return params


def remote_tools_config(*, port: int, token: str) -> JsonObject:
    """The remote CLI's `--mcp-config`: the remote endpoint's IDE tools."""
    return mcp_config(f"http://{HOST_PLACEHOLDER}:{port}{IDE_TOOLS_PATH}", token)


def remote_lock_content(*, port: int, translator: PathTranslator, token: str) -> dict[str, Any]:
    """The lock file the remote CLI reads: the folders it sees (POSIX: joined
    with `:`, its `path.delimiter`), no `ppid`."""
    return {
        "port": port,
        "workspacePath": ":".join(translator.remote_folders()),
        "authToken": token,
        "ideName": lockfile.IDE_NAME,
        "ideInfo": dict(lockfile.IDE_INFO),
    }
