"""A stand-in for the LSP package (sublimelsp/LSP) with scripted language servers.

It models the part of LSP's plugin API (`LSP.plugin`) that QwenCompanion
uses, as LSP 2.x defines it:
* `LspWindowCommand(window).sessions()`: the window's running sessions.
* `Session.config.name`, `session_view_for_view_async(view)` (a session is
  attached to the open views it serves) whose `has_capability_async(name)`
  reads the server's capabilities, `send_request_async(request, on_result,
  on_error)` (must be called on Sublime's worker thread; the answer comes
  later, on that thread), and `diagnostics` (`get_diagnostics_for_uri(uri)`,
  `get_diagnostics()` -> {uri: [Diagnostic]}).
* `Request(method, params, view)`, `uri_from_view`, `filename_to_uri` and
  `parse_uri` (`file` URIs to local paths).
Like LSP, it ends its sessions when it is unloaded (disabled or removed),
though its `LSP.plugin` module stays imported. Its `.python-version` is
LSP's (3.8), which Sublime from build 4205 runs in the 3.14 plugin host.
"""

from __future__ import annotations

import sys
import textwrap
from typing import Any

from tests.sublime_sim import SimulatedHost

FAKE_LSP_PLUGIN = '''
import threading
from urllib.parse import urljoin, urlparse
from urllib.request import pathname2url, url2pathname

import sublime
import sublime_plugin

SERVERS = []  # the running language servers (FakeServer), in start order


class FakeServer:
    """A language server: serves open files ending in `suffix`; answers each
    method with `answers[method](params)` (an exception becomes an LSP
    error); never answers the methods in `silent`."""

    def __init__(self, name, suffix, capabilities, answers=None, diagnostics=None, silent=()):
        self.name = name
        self.suffix = suffix
        self.capabilities = set(capabilities)
        self.answers = dict(answers or {})
        self.diagnostics = dict(diagnostics or {})  # uri -> [Diagnostic]
        self.silent = set(silent)
        self.requests = []  # (method, params) as received


class _Config:
    def __init__(self, name):
        self.name = name


class _SessionView:
    def __init__(self, view, server):
        self.view = view
        self._server = server

    def has_capability_async(self, capability):
        return capability in self._server.capabilities


class _DiagnosticsStorage:
    def __init__(self, server):
        self._server = server

    def get_diagnostics(self):
        return {uri: list(items) for uri, items in self._server.diagnostics.items()}

    def get_diagnostics_for_uri(self, uri):
        return list(self._server.diagnostics.get(uri, []))


class Session:
    def __init__(self, server):
        self._server = server
        self.config = _Config(server.name)
        self.diagnostics = _DiagnosticsStorage(server)
        self._ids = 0

    def session_view_for_view_async(self, view):
        name = view.file_name()
        if view.is_valid() and name and name.endswith(self._server.suffix):
            return _SessionView(view, self._server)
        return None

    def send_request_async(self, request, on_result, on_error=None):
        if threading.current_thread().name != "sublime-worker":
            raise RuntimeError("send_request_async must be called from Sublime's worker thread")
        self._ids += 1
        self._server.requests.append((request.method, request.params))
        if request.method in self._server.silent:
            return self._ids
        try:
            result = self._server.answers[request.method](request.params)
        except Exception as error:
            failed = {"code": -32603, "message": str(error)}
            sublime.set_timeout_async(lambda: (on_error or (lambda _: None))(failed))
        else:
            sublime.set_timeout_async(lambda: on_result(result))
        return self._ids


class LspWindowCommand(sublime_plugin.WindowCommand):
    capability = ""
    session_name = ""

    def sessions(self):
        for server in SERVERS:
            yield Session(server)


class Request:
    def __init__(self, method, params=None, view=None, progress=False, on_partial_result=None):
        self.method = method
        self.params = params
        self.view = view


def filename_to_uri(file_name):
    return urljoin("file:", pathname2url(file_name))


def uri_from_view(view):
    name = view.file_name()
    return filename_to_uri(name) if name else "buffer:{}".format(view.buffer_id())


def parse_uri(uri):
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return parsed.scheme, url2pathname(parsed.path)
    return parsed.scheme, uri
'''


FAKE_LSP_BOOT = '''
from .plugin import SERVERS


def plugin_unloaded():
    SERVERS.clear()  # LSP ends its sessions
'''


def install_lsp(host: SimulatedHost) -> Any:
    """Install and load the stand-in LSP; returns its `LSP.plugin` module
    (`SERVERS`, `FakeServer`, `filename_to_uri`)."""
    root = host.packages_dir / "LSP"
    (root / "plugin").mkdir(parents=True)
    (root / ".python-version").write_text("3.8\n")
    (root / "plugin" / "__init__.py").write_text(textwrap.dedent(FAKE_LSP_PLUGIN))
    (root / "boot.py").write_text(FAKE_LSP_BOOT)
    host.load_package("LSP", at_startup=False)
    return sys.modules["LSP.plugin"]
