"""Qwen Code: Chat and the commands on the window's chat: New Chat, Cancel,
Chat History…, its mode and model, its session options, and Show Agent Log."""

from __future__ import annotations

from concurrent.futures import Future
from typing import TYPE_CHECKING

import sublime
import sublime_plugin

from ..background import in_background, when_done
from ..companion.terminal import window_cwd
from ..quick_panel_items import panel_item
from .agent.serve_daemon import stop_serve
from .command_bases import ActiveChatCommand, WindowChatCommand
from .transcript.chat_tabs import open_new_chat
from .window_chats import chat_imported_or_later, chats

if TYPE_CHECKING:
    from ...core.chat.agent.session_options import SessionOption
    from .window_chats import WindowChat

AGENT_LOG_PANEL = "Qwen Agent Log"


class QwenChatCommand(WindowChatCommand):
    """Qwen Code: Chat — open or focus the window's chat."""

    def run(self) -> None:
        if not chat_imported_or_later(lambda: self.window.run_command("qwen_chat")):
            return
        chat = self.window_chat(show=True)
        if chat is not None and not self.window.folders():
            self.window.status_message(
                f"Qwen Code: this window has no folder, so qwen works in {window_cwd(self.window)}; "
                "open your project's folder (File → Open Folder…) for a chat about it"
            )
        state = chat.state if chat is not None else None
        if chat is not None and state is not None and state.agent_status == "stopped" and not state.stopped_why:
            # The agent starts, and reloads the last chat, while the user types; after a failed start only a send retries.
            chat.start()


class QwenChatNewCommand(sublime_plugin.WindowCommand):
    """Qwen Code: New Chat — a new conversation in a tab of its own (the others stay)."""

    def run(self, agent: str = "", transport: str = "") -> None:
        """`agent`: a name of the chat_agents setting (default: chat_agent);
        `transport`: "stdio" or "serve" (default: chat_transport)."""
        if not chat_imported_or_later(lambda: self.window.run_command("qwen_chat_new",
                                                                       {"agent": agent, "transport": transport})):
            return
        open_new_chat(self.window, agent or None, transport or None)


class QwenServeStopCommand(sublime_plugin.WindowCommand):
    """Qwen Code: Stop Serve Daemon — end the `qwen serve` daemon of the window's
    folders and the agents it started (whatever serve_keep_running says)."""

    def run(self) -> None:
        window = self.window

        def work() -> None:
            stopped = stop_serve(window)
            sublime.set_timeout(lambda: window.status_message(
                "Qwen Code: the serve daemon was stopped" if stopped else "Qwen Code: no serve daemon runs for these folders"))

        in_background(work, "serve stop")  # it waits for the daemon's end


class QwenChatCancelCommand(ActiveChatCommand):
    def run(self) -> None:
        chat = self.active_chat()
        if chat is not None:
            chat.cancel()


class _ChoiceCommand(WindowChatCommand):
    kind = "mode"

    def run(self) -> None:
        chat = self.window_chat()
        if chat is None:
            return

        def started(done: Future[None]) -> None:
            error = done.exception()
            if error is not None:
                sublime.status_message(f"Qwen Code: {error}")
            elif chat.session_id:
                self.choose(chat)
            # else the chat's transcript already says why the agent did not start

        if chat.session_id:
            self.choose(chat)
        else:
            sublime.status_message("Qwen Code: starting the agent…")
            when_done(chat.start(), started)

    def choose(self, chat: WindowChat) -> None:
        kind = self.kind
        state = chat.state
        choices = state.modes if kind == "mode" else state.models
        current = state.mode_id if kind == "mode" else state.model_id
        if not choices:
            sublime.status_message(f"Qwen Code: the agent offers no {kind}s")
            return
        items = [panel_item(c.name, annotation="current" if c.id == current else "", details=c.description)
                 for c in choices]
        selected = next((i for i, c in enumerate(choices) if c.id == current), -1)

        def picked(index: int) -> None:
            if index >= 0:
                setter = chat.set_mode if kind == "mode" else chat.set_model
                setter(choices[index].id)

        self.window.show_quick_panel(items, picked, selected_index=selected, placeholder=f"Chat {kind}")


class QwenChatModeCommand(_ChoiceCommand):
    kind = "mode"


class QwenChatModelCommand(_ChoiceCommand):
    kind = "model"


class QwenChatSessionOptionsCommand(_ChoiceCommand):
    """Qwen Code: Session Options — every option the agent offers (model,
    mode, thought level, switches), set through session/set_config_option;
    for an agent without config options, its modes and models."""

    def choose(self, chat: WindowChat) -> None:
        options = chat.state.options
        if not options.options:
            self._older_pickers(chat)
            return
        shown = list(options)
        items = [panel_item(o.name, annotation=o.current_name()[:40], details=o.description[:200])
                 for o in shown]
        more = f" ({options.left_out} more not shown)" if options.left_out else ""

        def picked(index: int) -> None:
            if index < 0:
                return
            option = shown[index]
            if option.kind == "boolean":
                chat.set_option(option.id, not option.current)
            else:
                self._pick_value(chat, option)

        self.window.show_quick_panel(items, picked, placeholder=f"Session options{more}")

    def _pick_value(self, chat: WindowChat, option: SessionOption) -> None:
        choices = option.choices
        if not choices:
            sublime.status_message(f"Qwen Code: the agent offers no values for {option.name}")
            return
        items = [panel_item(c.name, annotation="current" if c.id == option.current else "",
                            details=c.description) for c in choices]
        selected = next((i for i, c in enumerate(choices) if c.id == option.current), -1)
        more = f" ({option.choices_left_out} more not shown)" if option.choices_left_out else ""

        def picked(index: int) -> None:
            if index >= 0:
                chat.set_option(option.id, choices[index].id)

        self.window.show_quick_panel(items, picked, selected_index=selected, placeholder=f"{option.name}{more}")

    def _older_pickers(self, chat: WindowChat) -> None:
        state = chat.state
        kinds = [kind for kind, offered in (("mode", state.modes), ("model", state.models)) if offered]
        if not kinds:
            sublime.status_message("Qwen Code: the agent offers no session options")
            return

        def picked(index: int) -> None:
            if index >= 0:
                self.window.run_command(f"qwen_chat_{kinds[index]}")

        self.window.show_quick_panel([kind.capitalize() for kind in kinds], picked, placeholder="Session options")


class QwenChatCycleModeCommand(ActiveChatCommand):
    """Shift+Tab in the composer: the next mode."""

    def run(self) -> None:
        chat = self.active_chat()
        if chat is None or not chat.state.modes:
            return
        modes = [m.id for m in chat.state.modes]
        current = chat.state.mode_id
        following = modes[(modes.index(current) + 1) % len(modes)] if current in modes else modes[0]
        chat.set_mode(following)


class QwenChatShowAgentLogCommand(sublime_plugin.WindowCommand):
    """Qwen Code: Show Agent Log — the agent's stderr (ACP traffic is in the
    package log at log_level DEBUG, text and file contents left out)."""

    def run(self) -> None:
        chat = chats.get(self.window)
        lines = chat.stderr_lines() if chat is not None else []
        panel = self.window.create_output_panel(AGENT_LOG_PANEL)
        panel.settings().update({"word_wrap": False, "gutter": False})
        panel.set_read_only(False)
        panel.run_command("append", {"characters": "\n".join(lines) + "\n" if lines else "(the agent has written nothing)\n"})
        panel.set_read_only(True)
        self.window.run_command("show_panel", {"panel": f"output.{AGENT_LOG_PANEL}"})
