"""Drive the built package in the simulated Sublime host: JSON lines in and out.

    make -s headless WORKSPACE=<folder>
    python -m tests.headless --workspace <folder> [--package dist/QwenCompanion]

One window with the given folder is opened and the package loaded; HOME (and
QWEN_HOME) come from the environment, so the lock file lands where a `qwen`
started with the same HOME looks for it. Sublime's data folders are kept
under HOME where Sublime keeps them on Linux (~/.config/sublime-text/Packages,
with Packages/User, and ~/.cache/sublime-text/Cache), so quitting and starting
the driver again with the same HOME and folder is a real Sublime restart.
Output, one JSON object a line:

    {"event": "ready", "window": 1, "port": 40123, "lock_file": "...", "workspace": "..."}
    {"ok": true, "do": "<verb>", ...}              one answer per action
    {"event": "sessions", "window": 1, "connected": 2}     a CLI connected or left
    {"event": "diff_opened", "filePath", "original_view", "proposed_view"}
    {"event": "diff_closed", "filePath", "outcome"}  accepted / rejected / closed
    {"event": "chat_turn_ended", "window": 1, "chat": 1, "stopReason": "end_turn"}   also "cancelled", "error"
        (`chat` in events and verbs: a chat's id, unique across windows; a window has several)
    {"event": "chat_error", "window": 1, "chat": 1, "message": "..."}
    {"event": "chat_steered", "window": 1, "chat": 1, "text": "...", "late": false}   a steer entered the session (`qwen serve`):
        the running turn took it, or (`late`) the turn had ended and the daemon sent it as a turn of its own
    {"event": "worktree_created", "window": 1, "chat": 2, "worktree": {"path", "branch"}}   also "worktree_discarded" (no chat)
    {"event": "worktree_refused", "window": 1, "message": "..."}   nothing was made or removed
    {"event": "worktree_applied", "window": 1, "worktree": {"path", "branch"}, "applied": [{"path", "why"}], "conflicts": [...], "refused": [...]}
    {"event": "notification", "window": 1, "chat": 1, "kind": "permission", "text": "asks: Shell"}   also "turn_ended", "question"
    {"event": "turn_changes", "window": 1, "chat": 1, "turn": 1, "files": [{"path", "added", "removed", "state"}]}
    {"event": "permission_requested", "window": 1, "chat": 1, "toolCall": {"toolCallId", "kind", "title", "locations"}, "options": [{"optionId", "kind", "name"}]}
    {"event": "elicitation_requested", "window": 1, "chat": 1, "mode": "form", "message": "...", "fields": [{"name", "type", "title", "required", "default", "choices"}]}   mode "url": a "url", no fields
    {"event": "tool_call", "window": 1, "chat": 1, "toolCallId": "...", "status": "pending", "title": "...", "kind": "edit"}
    {"event": "mention_added", "window": 1, "chat": 1, "token": "diff", "summary": "..."}   what the composer's @token will send
    {"event": "mention_failed", "window": 1, "chat": 1, "message": "..."}   why a mention could not be made
    {"event": "action_started", "window": 1, "action": "explain"}
    {"event": "action_finished", "window": 1, "action": "explain", "outcome": "answered"}   also "proposed", "cancelled", "failed"

Actions, one JSON object a line on stdin (`{"do": VERB, ...}`); see ACTIONS.
End of input quits like `{"do": "quit"}`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import urllib.parse
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from tests.sublime_sim import SimulatedHost
from tests.support.editor import drawn_transcript, wait_for_package_threads
from tests.support.mcp_client import McpClient

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "QwenCompanion"
DIFF_VIEW_SETTING = "qwen_companion.diff_view"
ANSWER_VIEW_SETTING = "qwen_actions.answer"
ANSWER_PANEL = "qwen_answer"
WAIT = 10.0

Action = Callable[["Driver", dict[str, Any]], dict[str, Any]]


class Driver:
    def __init__(self, host: SimulatedHost, out: Callable[[dict[str, Any]], None]) -> None:
        self.host = host
        self.sublime = host.sublime
        self.out = out
        self.windows: dict[int, Any] = {}

    # --- set-up ------------------------------------------------------------

    @property
    def companions(self) -> Any:
        return sys.modules[f"{PACKAGE}.plugin.companion.companions"].companions

    @property
    def chats(self) -> Any:
        return sys.modules[f"{PACKAGE}.plugin.chat.window_chats"].chats

    def chat(self, action: dict[str, Any]) -> Any:
        """Chat `chat`, else the window's active chat (made on first use), its
        views open (as "Qwen Code: Chat" leaves them)."""
        if action.get("chat") is not None:
            chat = self.chat_by_id(action["chat"])
            transcript, composer = chat.transcript_view, chat.composer_view
            if transcript is None or not transcript.is_valid() or composer is None or not composer.is_valid():
                tabs = sys.modules[f"{PACKAGE}.plugin.chat.transcript.chat_tabs"]
                self.host.run_on_main(lambda: tabs.select_chat(self.windows[chat.window_id], chat))
                self.host.wait_idle()
            return chat
        window = self.window(action)
        self.host.run_on_main(lambda: window.run_command("qwen_chat"))
        wait_for_package_threads(self.host, "preload")  # a Chat right after start-up imports it first
        self.host.wait_idle()
        chat = self.chats.get(window)
        if chat is None:
            raise LookupError("the window has no chat")
        return chat

    def chat_by_id(self, chat_id: Any) -> Any:
        chat = self.chats.by_id(int(chat_id))
        if chat is None:
            raise LookupError(f"no chat {chat_id}")
        return chat

    def start(self, workspace: Path) -> dict[str, Any]:
        window = self.host.window
        self.host.user.set_folders([workspace], window=window)
        self.host.load_package(PACKAGE)
        wait_for_package_threads(self.host, "start")  # servers up, the chat's libraries imported
        self.companions.sessions_listeners.append(
            lambda window_id, connected: self.out({"event": "sessions", "window": window_id, "connected": connected})
        )
        reviews = sys.modules[f"{PACKAGE}.plugin.reviews.review_tabs"].reviews
        reviews.observers.append(self._diff_event)
        self.chats.observers.append(lambda event, details: self.out({"event": event, **details}))
        actions = sys.modules[f"{PACKAGE}.plugin.actions.jobs"].actions
        actions.observers.append(lambda event, details: self.out({"event": event, **details}))
        return {"event": "ready", **self._window_info(window)}

    def _window_info(self, window: Any) -> dict[str, Any]:
        companion = self.host.wait_for(lambda: self.companions.get(window), timeout=WAIT)
        self.host.wait_for(lambda: companion.lock_file.exists(), timeout=WAIT)
        self.windows[window.id()] = window
        return {
            "window": window.id(),
            "port": companion.port,
            "lock_file": str(companion.lock_file),
            "workspace": companion.workspace_path,
        }

    def _diff_event(self, event: str, details: dict[str, Any]) -> None:
        self.out({"event": event, **details})

    # --- helpers -----------------------------------------------------------

    def view(self, action: dict[str, Any]) -> Any:
        if "view" in action:
            view = self.sublime.View(int(action["view"]))
            if not view.is_valid():
                raise LookupError(f"no view {action['view']}")
            return view
        path = os.path.realpath(action["path"])
        for window in self.sublime.windows():
            for view in window.views():
                name = view.file_name()
                if name and os.path.realpath(name) == path:
                    return view
        raise LookupError(f"{action['path']} is not open")

    def window(self, action: dict[str, Any]) -> Any:
        if "window" in action:
            return self.windows[int(action["window"])]
        return self.sublime.active_window()

    def describe(self, view: Any, panel: str | None = None) -> dict[str, Any]:
        window = view.window()
        return {
            "id": view.id(),
            "name": view.name(),
            "file": view.file_name(),
            "scratch": view.is_scratch(),
            "read_only": view.is_read_only(),
            "dirty": view.is_dirty(),
            "group": window.get_view_index(view)[0] if window and not panel else None,
            "diff_view": view.settings().get(DIFF_VIEW_SETTING),
            "answer_view": bool(view.settings().get(ANSWER_VIEW_SETTING)),
            **({"panel": panel} if panel else {}),
        }


# --- actions ------------------------------------------------------------------


def do_open(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    view = driver.host.user.open_file(action["path"], window=driver.window(action))
    driver.host.user.focus(view)
    return {"view": view.id()}


def do_select(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    view = driver.view(action)
    start = view.text_point(action["start"][0] - 1, action["start"][1] - 1)
    end = view.text_point(action["end"][0] - 1, action["end"][1] - 1)
    driver.host.user.set_selection(view, [driver.sublime.Region(start, end)])
    return {"view": view.id(), "region": [start, end]}


def do_close(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    view = driver.view(action)
    return {"view": view.id(), "closed": driver.host.user.close(view)}


def do_views(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Every window's tabs, and the answer when it is in the bottom panel (with `panel`)."""
    views = []
    for window in driver.sublime.windows():
        views += [driver.describe(v) for v in window.views()]
        answer = window.find_output_panel(ANSWER_PANEL)
        if answer is not None:
            views.append(driver.describe(answer, f"output.{ANSWER_PANEL}"))
    return {"views": views}


def do_layout(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """The window's groups as Sublime lays them out, and what is visible: the
    active view of every group, and the shown panel."""
    window = driver.window(action)

    def read() -> dict[str, Any]:
        active = [window.active_view_in_group(g) for g in range(window.num_groups())]
        return {
            "window": window.id(),
            "layout": window.layout(),
            "active_group": window.active_group(),
            "focused_view": window.active_view().id() if window.active_view() else None,
            "groups": [{"group": g, "views": [v.id() for v in window.views_in_group(g)],
                        "visible": view.id() if view else None} for g, view in enumerate(active)],
            "panel": window.active_panel(),
        }

    return driver.host.run_on_main(read)


def do_text(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    view = driver.view(action)
    return {"view": view.id(), "text": view.substr(driver.sublime.Region(0, view.size()))}


def do_set_text(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    view = driver.view(action)
    driver.host.user.replace(view, driver.sublime.Region(0, view.size()), action["text"])
    return {"view": view.id()}


def do_command(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    name, args = action["name"], action.get("args")
    if "view" in action or "path" in action:
        view = driver.view(action)
        driver.host.run_on_main(lambda: view.run_command(name, args))
    else:
        window = driver.window(action)
        driver.host.run_on_main(lambda: window.run_command(name, args))
    return {"name": name}


def do_click(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Click a link (e.g. a review's Accept / Reject) in a view's annotations or phantoms."""
    view = driver.view(action)
    try:
        driver.host.user.click_annotation(view, action["href"])
    except LookupError:
        driver.host.user.click_phantom(view, action["href"])
    return {"view": view.id(), "href": action["href"]}


def do_new_window(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    window = driver.host.user.new_window()
    driver.host.user.set_folders(action.get("folders", []), window=window)
    return driver._window_info(window)


def do_state(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """The window's server: port, connected sessions, refused requests (no secrets)."""
    companion = driver.companions.get(driver.window(action))
    if companion is None:
        return {"running": False}
    return {
        "running": companion.running,
        "port": companion.port,
        "workspace": companion.workspace_path,
        "sessions": [{"client": s.client_name, "stream_open": s.stream_open} for s in companion.sessions()],
        "auth_failures": [f.reason for f in companion.auth_failures()],
    }


def do_ide_tool(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Call one of the window's IDE tools as the CLI does (an MCP client of its
    `/ide-tools/mcp` endpoint, with the token of its `--mcp-config`): `result`
    is the tool's result exactly as an MCP client gets it."""
    window = driver.window(action)
    companion = driver.companions.get(window)
    if companion is None or companion.ide_tools_url is None or companion.ide_tools_token is None:
        raise LookupError("the window serves no IDE tools (the ide_tools setting is off, or no server runs)")
    name, arguments = action.get("name"), action.get("args", {})
    if not isinstance(name, str) or not isinstance(arguments, dict):
        raise ValueError("ide_tool needs a tool's name and args (an object)")
    url = urllib.parse.urlsplit(companion.ide_tools_url)
    client = McpClient(url.port or 80, companion.ide_tools_token, "headless", path=url.path).connect(stream=False)
    return {"result": client.call(name, arguments)}


def do_terminal_spec(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """What Open in Terminal would run for the window: `cmd` (a list) or
    `shell_cmd` (a string for the platform's shell), `cwd` and `env` (added
    to the environment), as Terminus would get them; `--mcp-config` gives
    that qwen the IDE tools. `cli` "gemini" answers for gemini-cli instead;
    `chat` what Continue in Terminal runs for that chat (`--resume=<session>`)."""
    window = driver.window(action)
    terminal = sys.modules[f"{PACKAGE}.plugin.companion.terminal"]
    companion = driver.companions.get(window)
    if companion is None or not companion.running:
        raise LookupError("the window has no running server")
    cli = terminal.chosen_cli(action.get("cli", "qwen"))
    if cli is None:
        raise ValueError(f"cli must be \"qwen\" or \"gemini\", not {action.get('cli')!r}")
    if action.get("chat") is not None:  # Continue in Terminal: what resumes that chat's session
        chat = driver.chat_by_id(action["chat"])
        spec = driver.host.run_on_main(
            lambda: sys.modules[f"{PACKAGE}.plugin.chat.history.continue_commands"].continue_spec(window, chat))
        if spec is None:
            raise LookupError("the chat has no session yet")
    else:
        spec = driver.host.run_on_main(lambda: terminal.terminal_spec(window, companion, terminal.options(cli), cli=cli))
    if isinstance(spec, str):  # a word cmd.exe cannot be given
        raise ValueError(spec)
    return {key: spec[key] for key in ("cmd", "shell_cmd", "cwd", "env") if key in spec}


def do_clipboard(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """What is on the clipboard (e.g. after Copy Connect Command)."""
    return {"text": driver.host.run_on_main(driver.host.sublime.get_clipboard)}


def do_wait_idle(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    driver.host.wait_idle()
    return {}


def do_chat(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Type a prompt into the chat's composer and press Enter; `queued`: the
    prompts waiting after it (while a turn runs, this one among them)."""
    chat = driver.chat(action)
    composer = chat.composer_view
    driver.host.user.type(composer, action["text"])
    driver.host.user.press_key("enter")
    return {"window": chat.window_id, "chat": chat.chat_id, "agent": chat.agent, "queued": len(chat.core.queue)}


def do_chat_cancel(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Esc in the composer."""
    chat = driver.chat(action)
    driver.host.user.focus(chat.composer_view)
    driver.host.user.press_key("escape")
    return {"window": chat.window_id, "chat": chat.chat_id}


def do_chat_text(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """The transcript as the view shows it, and the chat's state."""
    chat = driver.chat(action)
    text = drawn_transcript(driver.host, chat, lambda view: view.substr(driver.sublime.Region(0, view.size())), WAIT)
    state = chat.core.state
    return {
        "window": chat.window_id,
        "chat": chat.chat_id,
        "text": text,
        "agent": state.agent_status,
        "agent_name": chat.agent,  # its name in chat_agents
        "session": state.session_id,
        "mode": state.mode_id,
        "model": state.model_name(),  # as people call it
        "model_id": state.model_id,  # qwen's id, what set_model takes
        "pid": chat.core.pid,
        "usage": state.usage.report(),  # {inputTokens, outputTokens, cachedTokens, contextUsed, ...} as reported
    }


def _chat_window(driver: Driver, action: dict[str, Any]) -> Any:
    """The window of the chat `chat` names, else `window?`."""
    if action.get("chat") is not None:
        return driver.windows[driver.chat_by_id(action["chat"]).window_id]
    return driver.window(action)


def _chat_id(driver: Driver, action: dict[str, Any]) -> int | None:
    """The chat `chat` names, else the window's active chat (None: it has none)."""
    if action.get("chat") is not None:
        return int(driver.chat_by_id(action["chat"]).chat_id)
    chat = driver.chats.get(driver.window(action))
    return int(chat.chat_id) if chat is not None else None


def do_chat_mode(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Set the chat's mode by the agent's mode id (e.g. `auto-edit`), as Chat Mode… would."""
    chat = driver.chat(action)
    chat.core.option_setter.set_mode(str(action["mode"])).result(timeout=WAIT)
    return {"chat": chat.chat_id, "mode": chat.core.state.mode_id}


def do_plan(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """The chat's pinned plan as its composer shows it: the steps around the
    current one, how many are above and below, the progress."""
    chat = driver.chat(action)
    driver.host.wait_idle()
    pinned = chat.pinned_plan
    if pinned is None:
        return {"chat": chat.chat_id, "entries": [], "done": 0, "total": 0}
    return {
        "chat": chat.chat_id,
        "entries": [{"content": s.content, "status": s.status, "current": s.current} for s in pinned.steps],
        "done": pinned.progress.done, "total": pinned.progress.total,
        "above": pinned.above, "below": pinned.below, "finished": pinned.finished, "lines": pinned.lines(),
    }


def _option_json(option: Any) -> dict[str, Any]:
    return {"id": option.id, "name": option.name, "kind": option.kind, "category": option.category,
            "current": option.current, "currentName": option.current_name(),
            "choices": [{"value": c.id, "name": c.name} for c in option.choices],
            "choicesLeftOut": option.choices_left_out}


def _started_chat(driver: Driver, action: dict[str, Any]) -> Any:
    chat = driver.chat(action)
    if chat.core.state.session_id is None:
        chat.core.start().result(timeout=WAIT)
    return chat


def do_session_options(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """The config options the chat's agent offers (what Session Options… lists)."""
    chat = _started_chat(driver, action)
    options = chat.core.state.options
    return {"chat": chat.chat_id, "options": [_option_json(o) for o in options], "leftOut": options.left_out}


def do_mcp_servers(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """The MCP servers the chat's agent sees, as MCP Servers… lists them (starting the chat if need be)."""
    chat = _started_chat(driver, action)
    listed = sys.modules[f"{PACKAGE}.plugin.chat.agent.mcp_servers_command"].listed_servers(chat)
    return {"chat": chat.chat_id, "servers": [row.json() for row in listed]}


def do_session_option(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Set option `id` to `value` (a choice's value or name; true/false or
    on/off for a switch) as Session Options… would; `applied`: the agent now says so."""
    chat = _started_chat(driver, action)
    option = chat.core.state.options.get(str(action["id"]))
    if option is None:
        raise LookupError(f"the agent offers no option {action['id']!r}")
    raw = action["value"]
    value = raw if isinstance(raw, bool) and option.kind == "boolean" else option.value_of(str(raw))
    if value is None:
        raise ValueError(f"{raw!r} is not a value of {option.name}")
    chat.core.option_setter.set_option(option.id, value).result(timeout=WAIT)
    now = chat.core.state.options.get(option.id)
    return {"chat": chat.chat_id, "option": _option_json(now) if now else None,
            "applied": now is not None and now.current == value}


def _worktree_event(driver: Driver, window: Any, command: str, args: dict[str, Any], wanted: str) -> dict[str, Any]:
    """Run a worktree command of the window and wait for its outcome: the
    `wanted` event's details, or a refusal raised with its message."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def observe(event: str, details: dict[str, Any]) -> None:
        if event in (wanted, "worktree_refused") and details.get("window") == window.id():
            seen.append((event, details))

    driver.chats.observers.append(observe)
    try:
        driver.host.run_on_main(lambda: window.run_command(command, args))
        event, details = driver.host.wait_for(lambda: seen[0] if seen else None, timeout=WAIT * 30)
    finally:
        driver.chats.observers.remove(observe)
    wait_for_package_threads(driver.host, "worktree", "preload")
    driver.host.wait_idle()
    if event == "worktree_refused":
        raise ValueError(details["message"])
    return details


def do_serve_status(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """The window's folders' `qwen serve` daemon as it reports itself; all null when none was started."""
    status = sys.modules[f"{PACKAGE}.plugin.chat.agent.serve_daemon"].serve_status(driver.window(action))
    if status is None:
        return {"pid": None, "port": None, "sessions": None, "version": None}
    return {"pid": status.pid, "port": status.port, "sessions": status.sessions, "version": status.version}


def do_serve_stop(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Qwen Code: Stop Serve Daemon, waited for: `stopped` false when none ran."""
    stopped = sys.modules[f"{PACKAGE}.plugin.chat.agent.serve_daemon"].stop_serve(driver.window(action))
    driver.host.wait_idle()
    return {"stopped": stopped}


def do_chat_new(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Qwen Code: New Chat — a new chat (with `agent`, a name of chat_agents; default: chat_agent), made the active one;
    `transport`: "stdio" or "serve" (default: chat_transport).
    With `worktree` (a task name): New Chat in a Worktree, answering `{chat, worktree: {path, branch}}`.
    With `from_summary` (a chat): New Chat from Summary of that chat, its composer holding `@summary `."""
    if action.get("from_summary") is not None:
        source = driver.chat_by_id(action["from_summary"])
        recaps = sys.modules[f"{PACKAGE}.plugin.chat.offers.recap_commands"]
        window = driver.windows[source.window_id]
        made = driver.host.run_on_main(lambda: recaps.new_from_summary(window, source)).result(timeout=WAIT * 9)
        if made is None:
            raise LookupError("no chat was made")
        driver.host.wait_idle()
        return {"chat": made.chat_id}
    window = driver.window(action)
    if action.get("worktree") is not None:
        made = _worktree_event(driver, window, "qwen_chat_new_worktree", {"name": str(action["worktree"])},
                               "worktree_created")
        return {"chat": made["chat"], "worktree": made["worktree"]}
    before = {chat.chat_id for chat in driver.chats.of_window(window)}
    args = {key: str(action[key]) for key in ("agent", "transport") if action.get(key) is not None}
    driver.host.run_on_main(lambda: window.run_command("qwen_chat_new", args))
    wait_for_package_threads(driver.host, "preload")
    driver.host.wait_idle()
    made = [chat for chat in driver.chats.of_window(window) if chat.chat_id not in before]
    if not made:
        raise LookupError("no chat was made")
    return {"chat": made[0].chat_id}


def do_worktree_discard(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Qwen Code: Discard Worktree of chat `chat`, answering its yes as the user would
    (the simulated user's ok_cancel answer): `{worktree: {path, branch}}` once both are gone."""
    chat = driver.chat_by_id(action["chat"])
    if chat.worktree is None:
        raise ValueError(f"chat {chat.chat_id} works in no worktree")
    window = driver.windows[chat.window_id]
    gone = _worktree_event(driver, window, "qwen_worktree_discard", {"chat": chat.chat_id}, "worktree_discarded")
    return {"worktree": gone["worktree"]}


def do_worktrees(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """What Qwen Code: Worktrees… lists: the package's worktrees of the window's repository, with their states."""
    window = driver.window(action)
    commands = sys.modules[f"{PACKAGE}.plugin.chat.worktrees.worktree_commands"]
    terminal = sys.modules[f"{PACKAGE}.plugin.companion.terminal"]
    folder, store = driver.host.run_on_main(lambda: (terminal.window_cwd(window), commands.worktrees_folder()))
    found = commands.with_states(commands.listed(folder, store))  # git, on the driver's thread
    chats = {chat.worktree.path: chat.chat_id for chat in driver.chats.of_window(window) if chat.worktree is not None}
    return {"worktrees": [{"name": w.name, "path": w.path, "branch": w.branch, "chat": chats.get(w.path),
                           "state": state} for w, state in found]}


def _chats_worktree(driver: Driver, action: dict[str, Any]) -> Any:
    """Chat `chat`'s worktree (also once the chat is closed)."""
    worktree = driver.chats.worktree_of(int(action["chat"]))
    if worktree is None:
        raise ValueError(f"chat {action['chat']} works in no worktree")
    return worktree


def do_worktree_changes(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """What Qwen Code: Worktree Changes lists for chat `chat`: `{files: [{path, added, removed, state, kind}]}`."""
    worktree = _chats_worktree(driver, action)
    review = sys.modules[f"{PACKAGE}.plugin.chat.worktrees.worktree_review"]
    changes = sys.modules[f"{PACKAGE}.core.worktrees.worktree_changes"]
    files = changes.changes(worktree)  # git, on the driver's thread
    return {"files": driver.host.run_on_main(lambda: review.listing(worktree, files))}


def do_worktree_apply(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Qwen Code: Apply to My Files for chat `chat`'s worktree (only `files`, paths as
    Worktree Changes lists them, when given): `{applied, conflicts, refused}`, lists of {path, why}."""
    worktree = _chats_worktree(driver, action)
    window = driver.window(action)
    args = {"chat": int(action["chat"]), **({"files": list(action["files"])} if action.get("files") else {})}
    done = _worktree_event(driver, window, "qwen_worktree_apply", args, "worktree_applied")
    assert done["worktree"]["path"] == worktree.path
    return {kind: done[kind] for kind in ("applied", "conflicts", "refused")}


def do_chats(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """The window's chats in tab order."""
    window = driver.window(action)
    active = driver.chats.get(window)
    return {"chats": [
        {"chat": chat.chat_id, "sessionId": chat.core.state.session_id, "title": chat.title,
         "active": chat is active, "state": chat.core.state.agent_status}
        for chat in driver.chats.of_window(window)
    ]}


def do_chat_select(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Qwen Code: Switch Chat…, picking chat `chat`."""
    chat = driver.chat_by_id(action["chat"])
    window = driver.windows[chat.window_id]
    listed = driver.chats.of_window(window)
    driver.host.user.focus_window(window)
    driver.host.user.run_command("qwen_chat_switch", via="palette")
    driver.host.wait_for(lambda: [q for q in driver.host.quick_panels if not q.done], timeout=WAIT)
    driver.host.user.choose_quick_panel(listed.index(chat))
    driver.host.wait_idle()
    return {"chat": chat.chat_id, "active": driver.chats.get(window) is chat}


def do_chat_close(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Qwen Code: Close Chat on chat `chat`; its agent ends with the window's last chat."""
    chat = driver.chat_by_id(action["chat"])
    window = driver.windows[chat.window_id]
    driver.host.run_on_main(lambda: window.run_command("qwen_chat_close", {"chat": chat.chat_id}))
    driver.host.wait_idle()
    active = driver.chats.get(window)
    return {"chat": chat.chat_id, "active": active.chat_id if active is not None else None}


def _mentioned(driver: Driver, action: dict[str, Any], make: Callable[[Any, Any], None]) -> dict[str, Any]:
    """Run `make(window, chat)` on the main thread and answer with the chat's next
    mention: `{chat, token, summary}` (the composer now shows `@token`) or `{chat, error}`."""
    window = _chat_window(driver, action)
    chat = driver.chat(action)
    tabs = sys.modules[f"{PACKAGE}.plugin.chat.transcript.chat_tabs"]
    driver.host.run_on_main(lambda: tabs.select_chat(window, chat))  # a mention goes to the active chat
    made: list[dict[str, Any]] = []

    def observe(event: str, details: dict[str, Any]) -> None:
        if event in ("mention_added", "mention_failed") and details.get("chat") == chat.chat_id:
            made.append(details)

    driver.chats.observers.append(observe)
    try:
        driver.host.run_on_main(lambda: make(window, chat))
        details = driver.host.wait_for(lambda: made[0] if made else None, timeout=WAIT * 3)
    finally:
        driver.chats.observers.remove(observe)
    driver.host.wait_idle()
    if "message" in details:
        return {"chat": chat.chat_id, "error": details["message"]}
    return {"chat": chat.chat_id, "token": details["token"], "summary": details["summary"]}


def do_mention(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Add a mention to the composer as Qwen Code: Mention… does: `kind` is symbol
    (with `name`), diagnostics, diagnostics:window, diff or terminal."""
    args = {"kind": action["kind"], **({"name": action["name"]} if "name" in action else {})}
    return _mentioned(driver, action, lambda window, chat: window.run_command("qwen_chat_mention", args))


def do_paste_image(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Paste the clipboard's image into the composer (the platform's clipboard tool reads it)."""
    return _mentioned(driver, action, lambda window, chat: chat.composer_view.run_command("qwen_chat_paste_image"))


def do_chat_rewind(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Rewind to Here before the chat's prompt `turn` (0-based): `scope` "all"
    (the default), "files" or "conversation"; with `text`, Edit and Resend
    (the new prompt is sent). Answers once the agent has rewound and
    the files are back: the files restored, and why others were not."""
    window = _chat_window(driver, action)
    chat = driver.chat(action)
    rewind = sys.modules[f"{PACKAGE}.plugin.chat.history.rewind_commands"].rewind
    text = action.get("text")
    scope = str(action.get("scope", "all"))
    future = driver.host.run_on_main(lambda: rewind(window, chat, int(action["turn"]), text, True, scope))
    outcome = future.result(timeout=WAIT)
    driver.host.wait_idle()
    return {"chat": chat.chat_id, "filesRestored": outcome.files_restored, "notRestored": outcome.not_restored}


def _comments_module() -> Any:
    return sys.modules[f"{PACKAGE}.plugin.chat.comments.comment_commands"]


def do_review_comment(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Add Comment on lines `line`…`end_line` (1-based) of `path`, for chat `chat`
    or the window's active chat (quoted from the view when the file is open)."""
    chat = driver.chat(action)
    window = driver.windows[chat.window_id]
    path = str(Path(action["path"]).resolve())
    view = driver.host.run_on_main(lambda: window.find_open_file(path))
    end_line = action.get("end_line")
    comment = driver.host.run_on_main(lambda: _comments_module().add_comment(
        window, chat, path, int(action["line"]), None if end_line is None else int(end_line), str(action["text"]), view))
    return {"comment": comment.comment_id}


def do_review_comment_delete(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    driver.host.run_on_main(lambda: _comments_module().delete_comment(int(action["comment"])))
    return {}


def do_review_comments(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """The chat's comments, in the order made."""
    chat = driver.chat(action)
    driver.host.wait_idle()
    return {"comments": [{"comment": c.comment_id, "path": c.path, "line": c.line, "end_line": c.end_line,
                          "text": c.text, "state": c.state}
                         for c in _comments_module().book.of_chat(chat.chat_id)]}


def do_review_send(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Send Review: the chat's unsent comments as one prompt, `text` its overall message."""
    chat = driver.chat(action)
    window = driver.windows[chat.window_id]
    future = driver.host.run_on_main(lambda: _comments_module().send_review(window, chat, str(action.get("text", ""))))
    sent = future.result(timeout=WAIT)
    driver.host.wait_idle()
    return {"chat": chat.chat_id, "sent": sent}


def do_chat_branch(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Branch from Here after the chat's prompt `turn` (0-based, as chat_rewind):
    answers once the new chat is ready on the branch's session, its conversation shown."""
    window = _chat_window(driver, action)
    chat = driver.chat(action)
    branch = sys.modules[f"{PACKAGE}.plugin.chat.history.branch_commands"].branch
    future = driver.host.run_on_main(lambda: branch(window, chat, int(action["turn"])))
    made = future.result(timeout=WAIT * 3)
    if made is None:
        raise LookupError("the chat is not available")
    driver.host.wait_for(lambda: made.core.state.agent_status == "ready", timeout=WAIT * 3)
    driver.host.wait_idle()
    return {"chat": made.chat_id}


def _offers(driver: Driver, module: str) -> Any:
    return sys.modules[f"{PACKAGE}.plugin.chat.offers.{module}"]


def do_aside(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Qwen Code: Ask Aside… with `text`: answers once qwen has (or why it did not)."""
    window = _chat_window(driver, action)
    chat = driver.chat(action)
    future = driver.host.run_on_main(lambda: _offers(driver, "asides").ask(window, chat, str(action["text"])))
    answer = future.result(timeout=WAIT * 9)
    driver.host.wait_idle()
    return {"chat": chat.chat_id, "answer": answer}


def do_asides(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """The chat's kept asides, oldest first (the newest 20)."""
    chat = driver.chat(action)
    asides = _offers(driver, "asides").aside_thread(chat).asides()
    return {"chat": chat.chat_id, "asides": [{"question": a.question, "answer": a.answer} for a in asides]}


def do_recap(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Qwen Code: Summarize Conversation: the recap, once it is noted in the transcript."""
    window = _chat_window(driver, action)
    chat = driver.chat(action)
    text = driver.host.run_on_main(lambda: _offers(driver, "recap_commands").summarize(window, chat)).result(timeout=WAIT * 9)
    driver.host.wait_for(lambda: text in chat.core.streamer.transcript.text(), timeout=WAIT)
    driver.host.wait_idle()
    return {"chat": chat.chat_id, "text": text}


def do_memory(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Qwen Code: Remember… (`remember`: text) or Forget… (`forget`: text): what qwen did."""
    window = _chat_window(driver, action)
    chat = driver.chat(action)
    verb = "remember" if action.get("remember") is not None else "forget"
    text = str(action[verb])
    memory = _offers(driver, "memory_commands")
    change = driver.host.run_on_main(lambda: memory.change_memory(window, chat, verb, text)).result(timeout=WAIT * 18)
    driver.host.wait_idle()
    return {"chat": chat.chat_id, "summary": change.summary, "items": change.items}


def do_permission_rules(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """What Qwen Code: Permission Rules… lists: qwen's rules of both scopes."""
    chat = driver.chat(action)
    module = sys.modules[f"{PACKAGE}.core.chat.offers.permission_rules"]
    rules = chat.ask_qwen("Permission Rules", module.list_rules).result(timeout=WAIT * 3)
    return {"chat": chat.chat_id, "rules": [rule.report() for rule in rules]}


def do_permission_rule(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Add (`add`: rule) or remove (`remove`: rule) one of qwen's rules of `kind` in `scope`,
    as Permission Rules… does (an allow rule for the project asks the simulated user first)."""
    window = _chat_window(driver, action)
    chat = driver.chat(action)
    change = "add" if action.get("add") is not None else "remove"
    module = sys.modules[f"{PACKAGE}.core.chat.offers.permission_rules"]
    rule = module.PermissionRule(str(action["kind"]), str(action[change]), str(action["scope"]))
    commands = _offers(driver, "permission_rules_commands")
    rules = driver.host.run_on_main(lambda: commands.change_permission_rule(window, chat, change, rule)).result(
        timeout=WAIT * 3)
    driver.host.wait_idle()
    return {"chat": chat.chat_id, "rules": [each.report() for each in rules]}


def do_session_status(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """What Qwen Code: Session Status shows, as qwen says it now."""
    chat = driver.chat(action)
    status = _offers(driver, "status_panel").read(chat).result(timeout=WAIT * 3)
    return {"chat": chat.chat_id, **status.report()}


def do_suggestion(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """The follow-up suggestion the chat's composer shows now (null: none)."""
    chat = driver.chat(action)
    driver.host.wait_idle()
    return {"chat": chat.chat_id, "text": driver.host.run_on_main(lambda: _offers(driver, "suggestions").shown_suggestion(chat))}


def do_suggestion_accept(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """→ in the chat's empty composer: `text`, what the composer holds after."""
    chat = driver.chat(action)
    driver.host.user.focus(chat.composer_view)
    driver.host.user.press_key("right")
    driver.host.wait_idle()
    return {"chat": chat.chat_id, "text": driver.host.run_on_main(lambda: _view_text(driver, chat.composer_view))}


def _view_text(driver: Driver, view: Any) -> str:
    return str(view.substr(driver.sublime.Region(0, view.size())))


def _history(driver: Driver) -> Any:
    return sys.modules[f"{PACKAGE}.plugin.chat.history.history_commands"]


def _listed(driver: Driver, action: dict[str, Any]) -> tuple[Any, Any, list[Any]]:
    """(window, the chat that listed, the sessions of the window's folders) as Chat History lists them."""
    window = driver.window(action)
    asked = driver.host.run_on_main(lambda: _history(driver).history_of(window))
    if asked is None:
        raise LookupError("the chat is not available")
    lister, future = asked
    return window, lister, future.result(timeout=WAIT * 3)


def _listed_entry(driver: Driver, action: dict[str, Any]) -> tuple[Any, Any, Any]:
    window, lister, sessions = _listed(driver, action)
    entry = next((e for e in sessions if e.session_id == action["id"]), None)
    if entry is None:
        raise LookupError(f"no session {action['id']} in Chat History")
    return window, lister, entry


def do_sessions(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Chat History: the sessions of the window's folders, newest first; with
    `query`, those whose title or first prompt hold every word, or whose
    prompts and answers do (Search in Conversations)."""
    _, _, sessions = _listed(driver, action)
    history = sys.modules[f"{PACKAGE}.core.chat.history.history"]
    query = str(action.get("query") or "")
    index = sys.modules[f"{PACKAGE}.plugin.chat.history.conversation_index"]
    said = driver.host.run_on_main(lambda: index.sessions_matching(query)).result(timeout=WAIT) if query.strip() else set()
    return {"sessions": [
        {"id": e.session_id, "title": e.title, "updated": e.updated, "messages": e.messages,
         "firstPrompt": e.first_prompt, "cwd": e.cwd}
        for e in history.filtered(sessions, query, said)
    ]}


def do_session_resume(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Chat History's Enter on session `id`: a new chat tab goes on with it (or the chat that has it open);
    refused while qwen in a terminal holds it."""
    window, lister, entry = _listed_entry(driver, action)
    chat = driver.host.run_on_main(lambda: _history(driver).resume_unless_held(
        window, entry.session_id, entry.title, entry.cwd or None, lister.agent)).result(timeout=WAIT)
    if chat is None:
        raise LookupError("the chat is not available")
    if chat is not lister:
        driver.host.run_on_main(lambda: _history(driver).let_go_if_unused(window, lister))
    driver.host.wait_for(lambda: chat.core.state.session_id == entry.session_id and chat.core.state.agent_status == "ready",
                         timeout=WAIT * 3)
    driver.host.wait_idle()
    return {"chat": chat.chat_id}


def do_session_rename(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Chat History: Rename… on session `id`; answers once the list shows the new title."""
    window, lister, entry = _listed_entry(driver, action)
    title = str(action["title"])
    driver.host.run_on_main(lambda: _history(driver).rename_listed(window, lister, entry.session_id, title))
    driver.host.wait_for(lambda: any(e.session_id == entry.session_id and e.title == title.strip()
                                     for e in _listed(driver, action)[2]), timeout=WAIT)
    return {"id": entry.session_id, "title": title.strip()}


def do_session_delete(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Chat History: Delete… on session `id`, confirmed; answers once the list no longer has it."""
    window, lister, entry = _listed_entry(driver, action)
    driver.host.run_on_main(lambda: _history(driver).delete_listed(window, lister, entry.session_id))
    driver.host.wait_for(lambda: all(e.session_id != entry.session_id for e in _listed(driver, action)[2]),
                         timeout=WAIT)
    driver.host.wait_idle()
    return {"id": entry.session_id}


def do_chat_export(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Export Chat in `format` (markdown, html, jsonl): to the file `path`, else the text."""
    chat = driver.chat(action)
    commands = sys.modules[f"{PACKAGE}.plugin.chat.history.export_commands"]
    fmt = str(action.get("format") or "markdown")
    if fmt not in commands.FORMATS:
        raise ValueError(f"format must be one of {', '.join(commands.FORMATS)}")
    text = driver.host.run_on_main(lambda: commands.exported(chat, fmt)).result(timeout=WAIT)
    if action.get("path"):
        commands.write_export(str(action["path"]), text)
        return {"chat": chat.chat_id, "path": str(action["path"])}
    return {"chat": chat.chat_id, "text": text}


def _turn_review(driver: Driver) -> Any:
    return sys.modules[f"{PACKAGE}.plugin.chat.history.turn_review"]


def do_turn_changes(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """The files a turn changed (default: the last turn that changed files)."""
    window = _chat_window(driver, action)
    chat_id = _chat_id(driver, action)
    review = _turn_review(driver)

    def read() -> dict[str, Any]:
        turns = review.turns_of(window, chat_id)
        turn = action.get("turn") if action.get("turn") is not None else (turns and turns.last_changed_turn())
        return {"turn": turn, "files": review.summary(turns.files(turn)) if turns and turn else []}

    return driver.host.run_on_main(read)  # type: ignore[no-any-return]


def do_reference(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """The reference document of the view of `path` (what its diff gutter compares with), or null."""
    view = driver.view({"path": action["path"]})
    state = driver.host.app.view(view.id())
    return {"path": action["path"], "reference": state.buffer.reference_document if state else None}


def _turn_command(driver: Driver, action: dict[str, Any], command: str) -> dict[str, Any]:
    window = _chat_window(driver, action)
    chat_id = _chat_id(driver, action)
    args = {key: action[key] for key in ("turn", "path") if action.get(key) is not None} | {"chat": chat_id}
    driver.host.run_on_main(lambda: window.run_command(command, args))
    wait_for_package_threads(driver.host, "turn undo")
    driver.host.wait_idle()
    return do_turn_changes(driver, {"window": window.id(), "chat": chat_id, "turn": action.get("turn")})


def do_turn_undo(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Undo a turn's changes (one file with `path`): back to the checkpoints, byte-exact."""
    return _turn_command(driver, action, "qwen_turn_undo")


def do_turn_keep(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Keep a turn's changes (one file with `path`)."""
    return _turn_command(driver, action, "qwen_turn_keep")


def _review_module(name: str) -> Any:
    return sys.modules[f"{PACKAGE}.plugin.review_hunks.{name}"]


def _review_listing(record: Any) -> dict[str, Any]:
    """An open review's hunks, kept and undone ones too, each by its file and its stable `index`
    (a file kept or undone whole only, binary or large, is its one hunk 0)."""
    hunks: list[dict[str, Any]] = []
    for f in record.review.files:
        if f.whole_only:
            hunks.append({"path": f.path, "index": 0, "start": 1, "added": f.added, "removed": f.removed,
                          "state": f.state, "kind": f.kind})
            continue
        hunks += [{"path": f.path, "index": i, "start": e.start + 1, "added": e.added, "removed": e.removed,
                   "state": e.state, "kind": f.kind} for i, e in enumerate(f.entries)]
    return {"view": record.view.id(), "title": record.source.title, "pending": record.review.pending_hunks,
            "hunks": hunks}


def _review_source(driver: Driver, action: dict[str, Any], window: Any) -> Any:
    """The set of changes `action` names: a worktree chat's (`worktree`: its path, or true for the
    chat's own), every turn since `since`, or a turn (default: the last that changed files)."""
    worktree = action.get("worktree")
    if worktree:
        if worktree is True:
            chat = driver.chat_by_id(action["chat"]) if action.get("chat") is not None else driver.chats.get(window)
            worktree = chat.worktree.path if chat is not None and chat.worktree is not None else None
        encoding = sys.modules[f"{PACKAGE}.plugin.settings"].fallback_encoding()
        source = _review_module("worktree_source").worktree_source(window, worktree, encoding)
        if source is None:
            raise ValueError("no chat of this window works in that worktree")
        return source
    source = _review_module("turn_source").turn_source(window, _chat_id(driver, action), action.get("turn"),
                                                       action.get("since"))
    if source is None:
        raise ValueError("no turn of the chat changed files")
    return source


def do_review_open(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """The review view of a set of changes (see `_review_source`), opened as the agent's doing
    (the keys stay where they are); its hunks once shown."""
    window = _chat_window(driver, action)
    record = driver.host.run_on_main(
        lambda: _review_module("review_view").open_review(window, _review_source(driver, action, window),
                                                          by_user=False))
    wait_for_package_threads(driver.host, "review read")
    driver.host.wait_idle()
    return driver.host.run_on_main(lambda: _review_listing(record))  # type: ignore[no-any-return]


def _hunk_of(driver: Driver, action: dict[str, Any]) -> tuple[Any, int, int | None]:
    """(the open review showing `path` (of chat `chat`'s, when given), the file's index, the pending
    position of hunk `index`: None for a file kept or undone whole only); refused when it is settled."""
    path = str(Path(action["path"]).resolve())
    number = int(action["index"])
    chat_id = _chat_id(driver, action) if action.get("chat") is not None else None

    def find() -> tuple[Any, int, int | None]:
        records = [r for r in _review_module("review_view")._open.values() if r.view.is_valid()
                   and r.review.file(path) and chat_id in (None, getattr(r.source, "chat_id", None))]
        if not records:
            raise LookupError(f"no open review shows {action['path']}")
        record = records[-1]
        index = next(i for i, f in enumerate(record.review.files) if f.path == path)
        review_file = record.review.files[index]
        if review_file.whole_only:
            if number != 0 or review_file.state != "pending":
                raise ValueError(f"{action['path']} has no pending hunk {number}")
            return record, index, None
        position = review_file.pending_index(number)
        if position is None:
            state = review_file.entries[number].state if 0 <= number < len(review_file.entries) else "unknown"
            raise ValueError(f"hunk {number} of {action['path']} is {state}, not pending")
        return record, index, position

    return driver.host.run_on_main(find)  # type: ignore[no-any-return]


def do_hunk_keep(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Keep hunk `index` of `path` in an open review; answers `{hunks}` as review_open."""
    record, index, hunk = _hunk_of(driver, action)
    driver.host.run_on_main(lambda: _review_module("hunk_actions").keep(record, index, hunk))
    driver.host.wait_idle()
    return driver.host.run_on_main(lambda: _review_listing(record))  # type: ignore[no-any-return]


def do_hunk_undo(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Undo hunk `index` of `path` through the write path; answers once the file and its views
    changed; refused (`ok: false`, with the reason) when its lines changed since."""
    record, index, hunk = _hunk_of(driver, action)
    outcome: Future[str | None] = Future()
    driver.host.run_on_main(lambda: _review_module("hunk_actions").undo(record, index, hunk, outcome.set_result))
    why_not = outcome.result(timeout=WAIT)
    driver.host.wait_idle()
    if why_not is not None:
        raise ValueError(f"not undone: {why_not}")
    return driver.host.run_on_main(lambda: _review_listing(record))  # type: ignore[no-any-return]


def do_choose(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Pick item `index` of the open quick panel (waits for one to open)."""
    driver.host.wait_for(lambda: [q for q in driver.host.quick_panels if not q.done], timeout=WAIT)
    panel = next(q for q in driver.host.quick_panels if not q.done)
    items = [str(getattr(item, "trigger", item)) for item in panel.items]
    driver.host.user.choose_quick_panel(action["index"])
    return {"items": items}


def do_input(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Type `text` into the command palette's input for a command (e.g. Ask About
    Selection's question) and press Enter (waits for the input to open)."""
    driver.host.wait_for(lambda: [c for c in driver.host.app.command_inputs if not c.done], timeout=WAIT)
    command = [c for c in driver.host.app.command_inputs if not c.done][-1].command
    return {"command": command, "accepted": driver.host.user.submit_command_input(action["text"])}


def do_permission(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Answer the chat's waiting permission request with `option` (an optionId), as a click would;
    with `reason` instead: Reject with a Reason, the reason typed into its input panel."""
    window = driver.window(action)
    driver.host.wait_for(lambda: _pending_permission(driver, window), timeout=WAIT)
    if action.get("reason") is not None:
        driver.host.user.run_command("qwen_chat_permission", {"reason": True}, via="palette")
        driver.host.user.submit_input_panel(str(action["reason"]))
    else:
        driver.host.user.run_command("qwen_chat_permission", {"option": action["option"]}, via="palette")
    return {"window": window.id()}


def do_elicitation(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Answer the chat's waiting form: `values` (every field's, checked as the
    panels check them), or `decline` / `cancel` true; as the command palette's
    Answer Form would. A refused value leaves the form waiting: `error` says why."""
    args = {key: action[key] for key in ("values", "decline", "cancel") if key in action}
    if not args:
        raise ValueError("elicitation needs values, decline or cancel")
    window = driver.window(action)
    form = driver.host.wait_for(lambda: _open_form(driver, window), timeout=WAIT)
    driver.host.user.run_command("qwen_chat_answer_form", args, via="palette")
    return {"error": form.problem} if not form.settled else {}


def _open_form(driver: Driver, window: Any) -> Any:
    chat = driver.chats.get(window)
    forms = getattr(chat.request_handler(), "forms", None) if chat is not None else None
    return forms.open if forms is not None else None


def do_queue(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """The chat's queued prompts, the next one first."""
    chat = driver.chat(action)
    return {"chat": chat.chat_id, "prompts": [p.text for p in chat.core.queue.prompts()]}


def _queued(driver: Driver, action: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """Run Edit Queued Prompt… with `args` on queued prompt `index` (0-based), from the palette."""
    chat = driver.chat(action)
    index, count = int(action["index"]), len(chat.core.queue)
    if not 0 <= index < count:
        raise IndexError(f"no queued prompt {index} (0-based; {count} queued)")
    driver.host.user.run_command("qwen_chat_queued", {"chat": chat.chat_id, "index": index, **args}, via="palette")
    driver.host.wait_idle()
    return do_queue(driver, {"chat": chat.chat_id})


def do_queue_edit(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    return _queued(driver, action, {"action": "edit", "text": str(action["text"])})


def do_queue_remove(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    return _queued(driver, action, {"action": "remove"})


def do_queue_move(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    return _queued(driver, action, {"action": "move", "to": int(action["to"])})


def do_send_now(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Send queued prompt `index` next, cancelling the running turn."""
    return _queued(driver, action, {"action": "send_now"})


def do_chat_steer(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Steer queued prompt `index` into the running turn (out of the queue), as
    Edit Queued Prompt…'s Steer; only where the chat's agent offers it (`qwen
    serve`), else it stays queued and the status bar says why. `chat_steered`
    follows when the daemon gave it to the agent."""
    return _queued(driver, action, {"action": "steer"})


def _pending_permission(driver: Driver, window: Any) -> Any:
    chat = driver.chats.get(window)
    return chat is not None and getattr(chat.request_handler(), "pending", None) is not None and chat.request_handler().pending.oldest()


def do_action(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Run a quick action (explain, docstring, optimize, fix, unit_tests, ask
    with `question`) on a view's selection, as the command palette would."""
    view = driver.view(action) if "view" in action or "path" in action else driver.window(action).active_view()
    if view is None:
        raise LookupError("the window has no view")
    args = {"action": action["action"], **({"question": action["question"]} if "question" in action else {})}
    driver.host.user.focus(view)
    driver.host.run_on_main(lambda: view.run_command("qwen_action", args))
    window = view.window()
    return {"view": view.id(), "window": window.id() if window else None}


def do_action_cancel(driver: Driver, action: dict[str, Any]) -> dict[str, Any]:
    """Qwen Code: Cancel Action in the window."""
    window = driver.window(action)
    driver.host.run_on_main(lambda: window.run_command("qwen_cancel_action"))
    return {"window": window.id()}


ACTIONS: dict[str, Action] = {
    "open": do_open,  # {path, window?}
    "select": do_select,  # {path | view, start: [line, col], end: [line, col]} 1-based
    "close": do_close,  # {path | view}
    "views": do_views,
    "layout": do_layout,  # {window?}: groups, the visible view of each, the shown panel
    "text": do_text,  # {path | view}
    "set_text": do_set_text,  # {path | view, text}
    "command": do_command,  # {name, args?, view? | path? | window?}
    "click": do_click,  # {path | view, href}
    "new_window": do_new_window,  # {folders}
    "state": do_state,  # {window?}
    "clipboard": do_clipboard,
    "terminal_spec": do_terminal_spec,  # {window?, cli?, chat?}
    "ide_tool": do_ide_tool,  # {name, args?, window?} -> {result}: the MCP tools/call result
    "wait_idle": do_wait_idle,
    "chat": do_chat,  # {text, chat? | window?}
    "chat_cancel": do_chat_cancel,  # {chat? | window?}
    "chat_text": do_chat_text,  # {chat? | window?}
    "chat_mode": do_chat_mode,  # {chat?, mode}: the agent's mode id
    "plan": do_plan,  # {chat?} -> {entries: [{content, status, current}], done, total, above, below, finished}
    "mcp_servers": do_mcp_servers,  # {chat?} -> {servers: [{name, status, tools, problem?}]}
    "session_options": do_session_options,  # {chat?} -> {options: [{id, name, kind, current, choices}], leftOut}
    "session_option": do_session_option,  # {chat?, id, value} -> {option, applied}
    "mention": do_mention,  # {kind, name?, chat?}: @symbol/@diagnostics/@diff/@terminal into the composer
    "paste_image": do_paste_image,  # {chat?}: the clipboard's image into the composer
    "chat_new": do_chat_new,  # {window?, agent?, transport?, worktree? | from_summary: chat} -> {chat, worktree?}
    "aside": do_aside,  # {text, chat?} -> {answer}: Ask Aside, once answered
    "asides": do_asides,  # {chat?} -> {asides: [{question, answer}]}
    "recap": do_recap,  # {chat?} -> {text}: Summarize Conversation
    "session_status": do_session_status,  # {chat?} -> {context: {used, size, parts?}, stats, tasks, agents, commands, model}
    "memory": do_memory,  # {remember | forget: text, chat?} -> {summary, items}: Remember… / Forget…
    "permission_rules": do_permission_rules,  # {chat?} -> {rules: [{kind, rule, scope}]}
    "permission_rule": do_permission_rule,  # {add | remove: rule, kind, scope, chat?} -> {rules}
    "suggestion": do_suggestion,  # {chat?} -> {text | null}: the composer's follow-up suggestion
    "suggestion_accept": do_suggestion_accept,  # {chat?} -> {text}: → accepts it into the composer
    "serve_status": do_serve_status,  # {window?} -> {pid, port, sessions, version} (null: no daemon)
    "serve_stop": do_serve_stop,  # {window?} -> {stopped}
    "worktree_discard": do_worktree_discard,  # {chat} -> {worktree: {path, branch}}
    "worktrees": do_worktrees,  # {window?} -> {worktrees: [{name, path, branch, chat, state}]}
    "worktree_changes": do_worktree_changes,  # {chat} -> {files: [{path, added, removed, state, kind}]}
    "worktree_apply": do_worktree_apply,  # {chat, files?} -> {applied, conflicts, refused}: [{path, why}]
    "chats": do_chats,  # {window?} -> {chats: [{chat, sessionId, title, active, state}]}
    "chat_select": do_chat_select,  # {chat}
    "chat_close": do_chat_close,  # {chat}
    "chat_rewind": do_chat_rewind,  # {chat?, turn, text?, scope?}: Rewind to Here, or Edit and Resend with text
    "review_comment": do_review_comment,  # {path, line, end_line?, text, chat?} -> {comment}
    "review_comment_delete": do_review_comment_delete,  # {comment}
    "review_comments": do_review_comments,  # {chat?} -> {comments: [{comment, path, line, end_line, text, state}]}
    "review_send": do_review_send,  # {text?, chat?} -> {chat, sent}
    "chat_branch": do_chat_branch,  # {chat?, turn} -> {chat}: Branch from Here, a new chat on a new session
    "chat_export": do_chat_export,  # {chat?, format?, path?} -> {path | text}
    "sessions": do_sessions,  # {window?, query?} -> {sessions: [{id, title, updated, messages, firstPrompt, cwd}]}
    "session_resume": do_session_resume,  # {id, window?} -> {chat}
    "session_rename": do_session_rename,  # {id, title, window?}
    "session_delete": do_session_delete,  # {id, window?}
    "turn_changes": do_turn_changes,  # {chat?, turn?}
    "reference": do_reference,  # {path}
    "turn_undo": do_turn_undo,  # {chat?, turn?, path?}
    "turn_keep": do_turn_keep,  # {chat?, turn?, path?}
    "review_open": do_review_open,  # {chat?, turn?, since?, worktree?} -> {view, hunks: [{path, index, start, added, removed, state}]}
    "hunk_keep": do_hunk_keep,  # {path, index, chat?} -> {hunks} as review_open
    "hunk_undo": do_hunk_undo,  # {path, index, chat?} -> {hunks}; refused when its lines changed since
    "choose": do_choose,  # {index}: the open quick panel's item
    "input": do_input,  # {text}: the command palette's input for a command
    "elicitation": do_elicitation,  # {values | decline | cancel, window?}: answers the waiting form
    "permission": do_permission,  # {option | reason, window?}: answers the waiting permission request
    "queue": do_queue,  # {chat?} -> {prompts}: the queued prompts, next first
    "queue_edit": do_queue_edit,  # {chat?, index, text} -> {prompts}; index 0-based
    "queue_remove": do_queue_remove,  # {chat?, index} -> {prompts}
    "queue_move": do_queue_move,  # {chat?, index, to} -> {prompts}
    "send_now": do_send_now,  # {chat?, index} -> {prompts}: cancels the running turn, sends it next
    "chat_steer": do_chat_steer,  # {chat?, index} -> {prompts}: adds queued prompt index to the running turn (serve)
    "action": do_action,  # {action, question?, path? | view? | window?}: a quick action on the selection
    "action_cancel": do_action_cancel,  # {window?}
}


def run(workspace: Path, package: Path, stdin: Any, stdout: Any) -> int:
    lock = threading.Lock()

    def out(message: dict[str, Any]) -> None:
        with lock:
            stdout.write(json.dumps(message) + "\n")
            stdout.flush()

    home = Path(os.path.expanduser("~"))
    packages_dir = home / ".config" / "sublime-text" / "Packages"
    host = SimulatedHost(packages_dir, cache_dir=home / ".cache" / "sublime-text" / "Cache")
    try:
        host.install_package(package, PACKAGE)
        driver = Driver(host, out)
        out(driver.start(workspace))
        for line in stdin:
            if not line.strip():
                continue
            try:
                action = json.loads(line)
                verb = action["do"]
            except (ValueError, KeyError, TypeError):
                out({"ok": False, "do": None, "error": "each line must be a JSON object with a 'do' key"})
                continue
            if verb == "quit":
                break
            handler = ACTIONS.get(verb)
            if handler is None:
                out({"ok": False, "do": verb, "error": f"unknown action; known: quit, {', '.join(ACTIONS)}"})
                continue
            try:
                out({"ok": True, "do": verb, **handler(driver, action)})
            except Exception as error:  # the driver keeps serving after a bad action
                out({"ok": False, "do": verb, "error": f"{type(error).__name__}: {error}"})
        lock_files = [info["lock_file"] for info in map(driver._window_info, driver.windows.values())]
        host.quit()
        out({"ok": True, "do": "quit", "lock_files_left": [f for f in lock_files if Path(f).exists()]})
        return 0
    finally:
        host.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", required=True, type=Path, help="the window's folder")
    parser.add_argument("--package", type=Path, default=ROOT / "dist" / PACKAGE, help="the built package folder")
    args = parser.parse_args()
    if not args.workspace.is_dir():
        parser.error(f"--workspace {args.workspace} is not a folder")
    return run(args.workspace.resolve(), args.package, sys.stdin, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
