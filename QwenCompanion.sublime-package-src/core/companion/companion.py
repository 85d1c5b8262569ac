"""A `Companion` per editor window (its server, token and lock file), all on
one `LoopThread`.

Every public method here may be called from any thread; work is handed to the
loop and waited for with a timeout, so Sublime's threads never run asyncio code.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import threads
from ..cli.path_maps import PathTranslator
from ..ide_tools.answers import CodeKnowledge, UnavailableKnowledge
from ..loop_thread import LoopThread
from . import gemini_discovery, lockfile
from .diff_tools import DiffBackend, UnavailableDiffBackend, diff_tools
from .ide_messages import CONTEXT_UPDATE, IdeContext, Outgoing, empty_context
from .ide_tools_mcp import IDE_TOOLS_PATH, ide_tools, mcp_config
from .remote import (
    REMOTE_HOSTS,
    MappedDiffBackend,
    MappedKnowledge,
    remote_context,
    remote_lock_content,
    remote_params,
    remote_tools_config,
)
from .reservation import Reservation
from .server import AuthFailure, CompanionServer, ServerOptions

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionInfo:
    id_prefix: str
    client_name: str
    age_seconds: float
    stream_open: bool


class Companion:
    """One editor window's MCP server, token and discovery lock file.

    What answers the CLI's tools is given when it is built: `diff_backend`
    makes the backend of `openDiff` / `closeDiff` for this companion (whose
    sessions hear the user's decisions), `code_knowledge` answers the IDE tools.
    With `remote_translator` (the window's folders -> their paths elsewhere) a
    second server serves a CLI in WSL, a container or over SSH (`remote`), the
    file its connect command hands over kept in `remote_directory`.
    """

    def __init__(
        self,
        thread: LoopThread,
        *,
        folders: list[str],
        lock_directory: Path,
        diff_backend: Callable[[Companion], DiffBackend] = lambda companion: UnavailableDiffBackend(),
        code_knowledge: CodeKnowledge | None = None,
        options: ServerOptions = ServerOptions(),
        on_sessions_changed: Callable[[int], None] = lambda connected: None,
        ppid: int | None = None,
        reservation: Reservation | None = None,
        mcp_config_directory: Path | None = None,
        gemini_directory: Path | None = None,
        remote_translator: Callable[[list[str]], PathTranslator] | None = None,
        remote_directory: Path | None = None,
    ) -> None:
        self._thread = thread
        self.folders = list(folders)
        self.lock_directory = lock_directory
        self._reservation = reservation
        self.token = reservation.token if reservation is not None else secrets.token_hex(32)  # 256 bits
        self.ppid = os.getpid() if ppid is None else ppid
        self.lock_error: str | None = None
        # gemini-cli's discovery folder when gemini is served (`companion_clis`), else None.
        self.gemini_directory = gemini_directory
        self.gemini_error: str | None = None
        self.started_at = 0.0
        self._context = empty_context()
        backend = diff_backend(self)
        self._on_sessions_changed = on_sessions_changed
        self._server = CompanionServer(
            token=self.token,
            tools=diff_tools(backend),
            context=lambda: self._context,
            options=options,
            on_sessions_changed=self._sessions_changed,
        )
        self._remote_translator = remote_translator
        self.remote_directory = remote_directory
        self.remote_token = secrets.token_hex(32) if remote_translator is not None else None
        self._remote: CompanionServer | None = None
        if self.remote_token is not None:
            self._remote = CompanionServer(
                token=self.remote_token,
                tools=diff_tools(MappedDiffBackend(backend, self.translator)),
                context=lambda: remote_context(self._context, self.translator()),
                options=options,
                on_sessions_changed=self._sessions_changed,
                hosts=REMOTE_HOSTS,
            )
        # The IDE tools, with a token of their own, when `mcp_config_directory`
        # says where the terminal's `--mcp-config` file goes.
        self.mcp_config_directory = mcp_config_directory
        self.ide_tools_token = secrets.token_hex(32) if mcp_config_directory is not None else None
        knowledge = code_knowledge or UnavailableKnowledge()
        if self.ide_tools_token is not None:
            self._server.mount(CompanionServer(
                token=self.ide_tools_token,
                tools=ide_tools(knowledge),
                context=None,
                options=options,
                path=IDE_TOOLS_PATH,
            ))
        # The remote CLI's IDE tools: on the remote endpoint, with a token and
        # paths of their own.
        self.remote_ide_tools_token = (
            secrets.token_hex(32) if self._remote is not None and self.ide_tools_token is not None else None
        )
        if self._remote is not None and self.remote_ide_tools_token is not None:
            self._remote.mount(CompanionServer(
                token=self.remote_ide_tools_token,
                tools=ide_tools(MappedKnowledge(knowledge, self.translator)),
                context=None,
                options=options,
                path=IDE_TOOLS_PATH,
            ))

    # --- lifecycle -------------------------------------------------------

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def workspace_path(self) -> str:
        return lockfile.workspace_path(self.folders)

    @property
    def lock_file(self) -> Path:
        return lockfile.lock_path(self.lock_directory, self.port)

    @property
    def remote_port(self) -> int:
        """The remote endpoint's port; 0 without one."""
        return self._remote.port if self._remote is not None else 0

    @property
    def remote_connect_file(self) -> Path | None:
        """What a remote CLI needs, which the connect command hands over: its
        lock file's JSON on the first line, its IDE tools' `--mcp-config` (with
        the editor's address left to the install line) on the second. None
        without a remote endpoint."""
        if self.remote_directory is None or not self.remote_port:
            return None
        return self.remote_directory / f"{self.remote_port}.connect"

    def translator(self) -> PathTranslator:
        """The window's paths <-> the remote CLI's, for its current folders."""
        if self._remote_translator is None:
            return PathTranslator([], self.folders)
        return self._remote_translator(self.folders)

    @property
    def gemini_file(self) -> Path | None:
        if self.gemini_directory is None:
            return None
        return gemini_discovery.discovery_path(self.gemini_directory, pid=self.ppid, port=self.port)

    @property
    def running(self) -> bool:
        return self.port != 0 and self._thread.alive

    @property
    def ide_tools_url(self) -> str | None:
        if self.ide_tools_token is None or not self.running:
            return None
        return f"http://127.0.0.1:{self.port}{IDE_TOOLS_PATH}"

    @property
    def mcp_config_file(self) -> Path | None:
        """The `--mcp-config` file of the terminal's qwen; None without IDE tools."""
        if self.mcp_config_directory is None or not self.port:
            return None
        return self.mcp_config_directory / f"{self.port}.json"

    @threads.may_block
    def start(self) -> None:
        listener = self._reservation.listener if self._reservation is not None else None
        self._reservation = None  # the server owns the socket from here on
        self._thread.run(self._server.start(listener=listener))
        if self._remote is not None:
            self._thread.run(self._remote.start())
            log.info("remote endpoint for %s listening on 127.0.0.1:%d", self.workspace_path or "(no folder)",
                     self.remote_port)
        self.started_at = time.time()
        self._write_lock()
        self._write_mcp_config()
        log.info("server for %s listening on 127.0.0.1:%d", self.workspace_path or "(no folder)", self.port)

    @threads.may_block
    def stop(self) -> None:
        port = self.port  # the server forgets its port once stopped
        config = self.mcp_config_file
        remote_lock = self.remote_connect_file
        for server in (self._server, self._remote):
            if server is not None and server.port and self._thread.alive:
                try:
                    self._thread.run(server.stop())
                except Exception:
                    log.exception("stopping the server on port %d failed", server.port)
        self.remove_files(port, config, remote_lock)

    def remove_files(self, port: int | None = None, config: Path | None = None, remote_lock: Path | None = None) -> None:
        """Remove the lock file, gemini-cli's discovery file, the `--mcp-config`
        file and the remote lock file (only file removals: safe on any thread,
        even while the server still runs)."""
        port = self.port if port is None else port
        config = self.mcp_config_file if config is None else config
        remote_lock = self.remote_connect_file if remote_lock is None else remote_lock
        if remote_lock is not None:
            remote_lock.unlink(missing_ok=True)
        if port:
            lockfile.remove_lock(self.lock_directory, port)
            if self.gemini_directory is not None:
                gemini_discovery.remove(self.gemini_directory, pid=self.ppid, port=port)
        if config is not None:
            try:
                config.unlink(missing_ok=True)
            except OSError as error:
                log.warning("cannot remove %s: %s", config, error.strerror or error)

    def set_folders(self, folders: list[str]) -> None:
        """Called on every folder poll: rewrite the discovery files when the
        window's folders changed, or when something else deleted one (e.g. a CLI
        that cannot see this editor's pid and takes the file for a stale one)."""
        if folders != self.folders:
            self.folders = list(folders)
        elif not self.running or self._discovery_files_intact():
            return
        else:
            log.warning("a discovery file of port %d was deleted by something else; writing it again", self.port)
        if self.running:
            self._write_lock()

    def _write_lock(self) -> None:
        self.lock_error = lockfile.publish(
            self.lock_directory, port=self.port, folders=self.folders, token=self.token, ppid=self.ppid
        )
        if self.lock_error:
            log.error("%s; the CLI will not find this window's server", self.lock_error)
        if self.gemini_directory is not None:
            self.gemini_error = gemini_discovery.publish(
                self.gemini_directory, pid=self.ppid, port=self.port, folders=self.folders, token=self.token
            )
            if self.gemini_error:
                log.error("%s; gemini-cli will not find this window's server", self.gemini_error)
        remote_lock = self.remote_connect_file
        if remote_lock is not None and self.remote_token is not None:
            lines = [remote_lock_content(port=self.remote_port, translator=self.translator(), token=self.remote_token)]
            if self.remote_ide_tools_token is not None:
                lines.append(remote_tools_config(port=self.remote_port, token=self.remote_ide_tools_token))
            try:
                lockfile.write_private_text(remote_lock, "".join(json.dumps(line) + "\n" for line in lines))
            except OSError as error:
                log.error("cannot write %s (a remote CLI cannot connect): %s", remote_lock, error.strerror or error)

    def _discovery_files_intact(self) -> bool:
        """True when every file this server publishes is there, or cannot be
        written anyway (a refused folder is reported once, not retried each poll)."""
        qwen_ok = bool(self.lock_error) or self.lock_file.exists()
        gemini = self.gemini_file
        gemini_ok = gemini is None or bool(self.gemini_error) or gemini.exists()
        return qwen_ok and gemini_ok

    def _write_mcp_config(self) -> None:
        config, url = self.mcp_config_file, self.ide_tools_url
        if config is None or url is None or self.ide_tools_token is None:
            return
        try:
            lockfile.write_private_json(config, mcp_config(url, self.ide_tools_token))
        except OSError as error:
            log.error("cannot write %s (the terminal's qwen gets no IDE tools): %s", config, error.strerror or error)

    # --- messages to the CLIs -------------------------------------------

    def publish_context(self, context: IdeContext) -> bool:
        """Send a new editor context to every session; identical payloads are not resent."""
        if context == self._context:
            return False
        self._context = context
        self.notify(CONTEXT_UPDATE, context)
        return True

    def notify(self, method: str, params: Outgoing, session_id: str | None = None) -> None:
        self._thread.call_soon(self._notify, method, params, session_id)

    @threads.on_server_loop
    def _notify(self, method: str, params: Outgoing, session_id: str | None) -> None:
        """On the server thread: to the local sessions as it is, to the remote
        ones with their paths (a session id is in one server only)."""
        self._server.notify(method, params, session_id)
        if self._remote is not None and (session_id is None or self._remote.sessions.get(session_id) is not None):
            translated = remote_params(params, self.translator())
            if translated is not None:
                self._remote.notify(method, translated, session_id)

    @threads.on_server_loop
    def _sessions_changed(self, connected: int) -> None:
        """Either server's count changed: the listener hears the window's total."""
        if self._remote is not None:
            connected = self._server.sessions.connected_count() + self._remote.sessions.connected_count()
        self._on_sessions_changed(connected)

    # --- state for the status bar and the diagnose report ----------------

    @threads.may_block
    def sessions(self) -> list[SessionInfo]:
        async def snapshot() -> list[SessionInfo]:
            now = time.monotonic()
            return [
                SessionInfo(s.id[:8], s.client_name, now - s.created, s.stream_open)
                for server in (self._server, self._remote) if server is not None
                for s in server.sessions
            ]

        return self._thread.run(snapshot()) if self.running else []

    def auth_failures(self) -> list[AuthFailure]:
        remote = list(self._remote.auth_failures) if self._remote is not None else []
        return sorted([*self._server.auth_failures, *remote], key=lambda failure: failure.at)

    def has_session(self, session_id: str) -> bool:
        return any(server is not None and server.sessions.get(session_id) is not None
                   for server in (self._server, self._remote))
