"""The remote endpoint: a second server of a window, for a CLI that runs
elsewhere (WSL, a container, over SSH) and names the window's files by other
paths (`core.path_maps`).

It listens on 127.0.0.1 like the local one (a container reaches it through
`host.docker.internal`, SSH through `ssh -R`, WSL through its localhost
forwarding), with a token of its own, and every path crossing it is
translated: the context it sends, the paths openDiff / closeDiff name and the
ones the decisions go back with. A path that maps outside the window's folders
is refused.

Its lock file is not written into the local `~/.qwen/ide`: a local CLI would
find a workspace it cannot connect to. It is kept, 0600, in a folder of the
package's for the connect command to hand over on stdin (see
`core.remote_connect`), and holds no `ppid`: the CLI there deletes a lock file
whose pid it cannot see.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..path_maps import PathTranslator
from . import lockfile
from .diff_tools import DiffBackend
from .ide_messages import CloseDiffArguments, DiffAccepted, DiffRejected, IdeContext, OpenDiffArguments, Outgoing
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

    async def open_diff(self, session_id: str, arguments: OpenDiffArguments) -> ToolAnswer:
        local = self._translator().to_local(arguments.filePath)
        if local is None:
            return text_result(outside_message(arguments.filePath), is_error=True)
        return await self._backend.open_diff(session_id, arguments.model_copy(update={"filePath": local}))

    async def close_diff(self, session_id: str, arguments: CloseDiffArguments) -> ToolAnswer:
        local = self._translator().to_local(arguments.filePath)
        if local is None:
            return text_result(outside_message(arguments.filePath), is_error=True)
        return await self._backend.close_diff(session_id, arguments.model_copy(update={"filePath": local}))


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
