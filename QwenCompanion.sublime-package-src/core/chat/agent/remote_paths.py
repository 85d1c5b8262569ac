"""The paths of one ACP connection with an agent elsewhere (WSL, a container,
SSH), translated at the one place every message passes: the agent's lines
(acp_lines.py) call `outgoing` before writing and `incoming` after reading.

The editor names files by their local path; the agent by its own. Known path
fields are mapped with the chat's `PathTranslator`:

- to the agent: the `cwd` of session/new, load, resume and list; the `uri`
  (file://) of a prompt's resource links, embedded resources and images;
- from the agent: the `path` of fs/read_text_file and fs/write_text_file, the
  `locations[].path` and diff `path` of tool calls (session/update and
  session/request_permission), the `cwd`s of session/list's answer and the
  files of qwen's rewindSession answer (shown only).

A path that maps outside the window's folders is refused: an fs request is
answered with an error and never reaches the editor's client, a diff becomes
a line of text (never offered to write), a location is shown as the agent
sent it (locations are only shown). A local `cwd` with no remote name stops
the request before it is sent.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote, urlsplit

from ...cli.path_maps import PathTranslator

FS_METHODS = ("fs/read_text_file", "fs/write_text_file")
CWD_METHODS = ("session/new", "session/load", "session/resume", "session/list")
TOOL_CALL_UPDATES = ("tool_call", "tool_call_update")
REWIND_METHOD = "rewindSession"  # qwen's own, answered with the files it restored
REWIND_FILES = ("filesChanged", "filesFailed")
INVALID_PARAMS = -32602


class PathRefused(ValueError):
    """A local path the agent elsewhere has no name for."""


def _file_uri_path(uri: str) -> str | None:
    """The path of a file:// URI (`file:///C:/x` is `C:/x`), else None."""
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return None
    path = unquote(parts.path)
    if len(path) > 2 and path[0] == "/" and path[2] == ":":  # file:///C:/x
        path = path[1:]
    return path


def _remote_uri(path: str, fragment: str) -> str:
    return "file://" + quote(path) + (f"#{fragment}" if fragment else "")


class RemotePaths:
    """Translates the path fields of the messages of one agent connection."""

    def __init__(self, translator: PathTranslator) -> None:
        self.translator = translator
        # Our requests whose answers carry paths, by id: session/list (cwds), rewindSession (files).
        self._asked: dict[Any, str] = {}

    # --- to the agent -------------------------------------------------------

    def outgoing(self, message: dict[str, Any]) -> dict[str, Any]:
        """`message` with the agent's names for local paths (raises PathRefused
        for a `cwd` it cannot see)."""
        method = message.get("method")
        params = message.get("params")
        if not isinstance(params, dict):
            return message
        if method in CWD_METHODS and isinstance(params.get("cwd"), str):
            remote = self.translator.to_remote(params["cwd"])
            if remote is None:
                raise PathRefused(f"the folder {params['cwd']} has no path where the agent runs "
                                  "(no path_maps entry holds it)")
            params = {**params, "cwd": remote}
        if method in ("session/list", REWIND_METHOD) and "id" in message:
            self._asked[message["id"]] = method
        if method == "session/prompt" and isinstance(params.get("prompt"), list):
            params = {**params, "prompt": [self._prompt_block(block) for block in params["prompt"]]}
        return {**message, "params": params}

    def _prompt_block(self, block: Any) -> Any:
        if not isinstance(block, dict):
            return block
        if isinstance(block.get("uri"), str):
            block = {**block, "uri": self._remote_uri(block["uri"])}
        resource = block.get("resource")
        if isinstance(resource, dict) and isinstance(resource.get("uri"), str):
            block = {**block, "resource": {**resource, "uri": self._remote_uri(resource["uri"])}}
        return block

    def _remote_uri(self, uri: str) -> str:
        """A file:// URI as the agent names it; one it cannot see is left as
        it is (an embedded file carries its text; a link names what it can't read)."""
        path = _file_uri_path(uri)
        if path is None:
            return uri
        remote = self.translator.to_remote(path)
        return uri if remote is None else _remote_uri(remote, urlsplit(uri).fragment)

    # --- from the agent -----------------------------------------------------

    def incoming(self, message: dict[str, Any]) -> dict[str, Any] | str:
        """`message` with local paths, or why it is refused (for an fs request,
        which is then answered with that error)."""
        method = message.get("method")
        params = message.get("params")
        if method is None:
            return self._answer(message)
        if not isinstance(params, dict):
            return message
        if method in FS_METHODS:
            path = params.get("path")
            local = self.translator.to_local(path) if isinstance(path, str) else None
            if local is None:
                return f"{path!r} is outside the editor's folders (or no path_maps entry holds it)"
            return {**message, "params": {**params, "path": local}}
        if method == "session/update" and isinstance(params.get("update"), dict):
            update = params["update"]
            if update.get("sessionUpdate") in TOOL_CALL_UPDATES:
                return {**message, "params": {**params, "update": self._tool_call(update)}}
        if method == "session/request_permission" and isinstance(params.get("toolCall"), dict):
            return {**message, "params": {**params, "toolCall": self._tool_call(params["toolCall"])}}
        return message

    def _answer(self, message: dict[str, Any]) -> dict[str, Any]:
        request_id = message.get("id")  # the agent's: of any JSON type
        asked = self._asked.pop(request_id, None) if isinstance(request_id, (str, int)) else None
        result = message.get("result")
        if asked is None or not isinstance(result, dict):
            return message
        if asked == REWIND_METHOD:  # shown only: a file the editor cannot name keeps the agent's name
            return {**message, "result": {**result, **{
                key: [self._local_or_as_is(path) for path in result[key]]
                for key in REWIND_FILES if isinstance(result.get(key), list)}}}
        if not isinstance(result.get("sessions"), list):
            return message
        sessions = result["sessions"]
        # A session of a folder the editor cannot name keeps the agent's cwd: it lists under no window folder.
        local_sessions = [
            {**session, "cwd": self._local_or_as_is(session["cwd"])}
            if isinstance(session, dict) and isinstance(session.get("cwd"), str) else session
            for session in sessions
        ]
        return {**message, "result": {**result, "sessions": local_sessions}}

    def _local_or_as_is(self, path: Any) -> Any:
        local = self.translator.to_local(path) if isinstance(path, str) else None
        return path if local is None else local

    def _tool_call(self, call: dict[str, Any]) -> dict[str, Any]:
        call = dict(call)
        if isinstance(call.get("locations"), list):
            call["locations"] = [self._location(location) for location in call["locations"]]
        if isinstance(call.get("content"), list):
            call["content"] = [self._content(item) for item in call["content"]]
        return call

    def _location(self, location: Any) -> Any:
        if not (isinstance(location, dict) and isinstance(location.get("path"), str)):
            return location
        local = self.translator.to_local(location["path"])
        return location if local is None else {**location, "path": local}

    def _content(self, item: Any) -> Any:
        if not (isinstance(item, dict) and item.get("type") == "diff" and isinstance(item.get("path"), str)):
            return item
        local = self.translator.to_local(item["path"])
        if local is None:  # never offered as a change to a local file
            text = f"(a change to {item['path']}, outside the editor's folders: not shown)"
            return {"type": "content", "content": {"type": "text", "text": text}}
        return {**item, "path": local}


def refusal(request_id: Any, reason: str) -> dict[str, Any]:
    """The error answer to an fs request whose path is refused."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": INVALID_PARAMS, "message": reason}}
