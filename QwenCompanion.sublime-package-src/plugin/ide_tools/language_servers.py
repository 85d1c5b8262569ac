"""Questions to the language servers the LSP package (sublimelsp/LSP) runs.

From build 4205 LSP (`.python-version` 3.8) runs in the same 3.14 plugin
host as this package, so its plugin API (`LSP.plugin`) is called directly.
The package never imports LSP itself: it asks only while Sublime has LSP
loaded (its module is in `sys.modules`), so a disabled LSP stays unloaded.
LSP's sessions are used on Sublime's worker thread, as LSP requires; the
thread that asks waits for the answer, never longer than `LSP_TIMEOUT`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from concurrent.futures import Future, TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import sublime

from ...core import threads
from ...core.ide_tools.lsp_results import uris_in

LSP_MODULE = "LSP.plugin"
# A language server busy indexing may take a while; past this the tools answer
# from Sublime's index instead.
LSP_TIMEOUT = 5.0

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LspAnswer:
    server: str  # the language server's name (LSP's configuration name)
    result: Any = None
    paths: dict[str, str | None] = field(default_factory=dict)  # each URI of `result` as a local path
    error: str | None = None


class _Question:
    def __init__(self) -> None:
        self.server = ""
        self.answered: Future[LspAnswer | None] = Future()

    def answer(self, answer: LspAnswer | None) -> None:
        if not self.answered.done():
            self.answered.set_result(answer)


def lsp_plugin_api() -> ModuleType | None:
    """LSP's plugin API while Sublime has LSP loaded."""
    return sys.modules.get(LSP_MODULE)


@threads.may_block
def ask(view: sublime.View, method: str, capability: str, params: dict[str, Any]) -> LspAnswer | None:
    """The answer of the language server serving the open `view` with
    `capability`, or None when none does."""
    lsp = lsp_plugin_api()
    window = view.window()
    if lsp is None or window is None:
        return None
    question = _Question()
    sublime.set_timeout_async(lambda: _send(lsp, question, window, view, method, capability, params))
    return _wait(question)


def diagnostics(window: sublime.Window, path: str | None) -> LspAnswer | None:
    """Every language server's diagnostics of `path` (None: of every file),
    or None when no server runs."""
    lsp = lsp_plugin_api()
    if lsp is None:
        return None
    question = _Question()
    sublime.set_timeout_async(lambda: _collect(lsp, question, window, path))
    return _wait(question)


def _wait(question: _Question) -> LspAnswer | None:
    timeout = LSP_TIMEOUT
    try:
        return question.answered.result(timeout)
    except FutureTimeout:
        return LspAnswer(question.server, error=f"no answer within {timeout:g} s")


def _paths(lsp: ModuleType, uris: Iterable[str]) -> dict[str, str | None]:
    """Each URI as LSP maps it to a local path (None: not a file)."""
    paths: dict[str, str | None] = {}
    for uri in uris:
        scheme, path = lsp.parse_uri(uri)
        paths[uri] = path if scheme == "file" else None
    return paths


@threads.on_worker
def _send(
    lsp: ModuleType, question: _Question, window: sublime.Window, view: sublime.View, method: str,
    capability: str, params: dict[str, Any],
) -> None:
    """LSP's sessions require Sublime's worker thread."""
    try:
        for session in lsp.LspWindowCommand(window).sessions():
            session_view = session.session_view_for_view_async(view)
            if session_view is not None and session_view.has_capability_async(capability):
                break
        else:
            question.answer(None)
            return
        question.server = name = str(session.config.name)
        request = lsp.Request(method, dict(params, textDocument={"uri": lsp.uri_from_view(view)}), view)

        def on_result(result: Any) -> None:
            question.answer(LspAnswer(name, result, _paths(lsp, uris_in(result))))

        def on_error(error: dict[str, Any]) -> None:
            question.answer(LspAnswer(name, error=str(error.get("message", error))))

        session.send_request_async(request, on_result, on_error)
    except Exception as error:  # an LSP version whose API differs
        log.warning("Asking LSP for %s failed: %r", method, error)
        question.answer(LspAnswer(question.server or "LSP", error=f"the LSP package failed: {error!r}"))


def _collect(lsp: ModuleType, question: _Question, window: sublime.Window, path: str | None) -> None:
    try:
        servers: list[str] = []
        by_uri: dict[str, list[Any]] = {}
        for session in lsp.LspWindowCommand(window).sessions():
            servers.append(str(session.config.name))
            if path is not None:
                uri = lsp.filename_to_uri(path)
                by_uri.setdefault(uri, []).extend(session.diagnostics.get_diagnostics_for_uri(uri))
            else:
                for uri, items in session.diagnostics.get_diagnostics().items():
                    by_uri.setdefault(uri, []).extend(items)
        question.answer(LspAnswer(", ".join(servers), by_uri, _paths(lsp, by_uri)) if servers else None)
    except Exception as error:
        log.warning("Asking LSP for diagnostics failed: %r", error)
        question.answer(LspAnswer("LSP", error=f"the LSP package failed: {error!r}"))
