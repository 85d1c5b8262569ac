"""What a chat shows of its agent and session (status bar, pickers, /status),
and how it is read from what the agent says: its answer to a new or loaded
session, its session updates and qwen's own notices."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp.schema import AvailableCommandsUpdate, ConfigOptionUpdate, CurrentModeUpdate, SessionInfoUpdate, UsageUpdate

from ..display_text import display_text
from ..json_types import JsonObject
from .agent.agents import TITLE_MAX_CHARS
from .agent.session_options import (
    DESCRIPTION_MAX_CHARS as DESCRIPTION_MAX_CHARS,  # kept importable from here
    NAME_MAX_CHARS,
    Choice,
    SessionOptions,
    parse_options,
)
from .agent.usage import ChatUsage

MODE_NOTIFICATION = "qwen/notify/session/mode-update"
MODEL_NOTIFICATION = "qwen/notify/session/model-update"
TITLE_NOTIFICATION = "qwen/notify/session/title-update"  # qwen 0.24.4, with session_info_update, on a rename


RUNTIME_MODEL_PREFIX = "$runtime|"  # qwen's id of a model set at run time: `$runtime|<auth type>|<model>`


def readable_model(model_id: str) -> str:
    """The model's own name inside qwen's ACP model id, for an id its list
    does not name: `$runtime|openai|qwen3-coder(openai)` -> `qwen3-coder`.
    (Ids of routes, `qwen-route:v1:<hash>`, have no name in them: kept.)"""
    name = model_id
    if name.startswith(RUNTIME_MODEL_PREFIX):
        name = name[len(RUNTIME_MODEL_PREFIX):].partition("|")[2] or name
    if name.endswith(")") and "(" in name:
        name = name[: name.rindex("(")] or name  # `<model>(<auth type>)`
    return name


@dataclass
class ChatState:
    """What the status bar, pickers and /status show."""

    agent_status: str = "stopped"  # stopped | starting | ready | busy | exited
    stopped_why: str = ""  # why a start failed ("not signed in", …), while it is stopped for it
    session_id: str | None = None
    modes: list[Choice] = field(default_factory=list)
    mode_id: str | None = None
    models: list[Choice] = field(default_factory=list)
    model_id: str | None = None
    commands: list[Choice] = field(default_factory=list)
    # "mode" / "model" -> the config option that sets it, when the agent
    # offers one instead of session/set_mode or its models list.
    config_ids: dict[str, str] = field(default_factory=dict)
    usage: ChatUsage = field(default_factory=ChatUsage)
    queued: int = 0
    pid: int | None = None
    started_at: float = 0.0
    agent_name: str = ""
    # Whether the agent takes image blocks (its promptCapabilities); None until it has started.
    accepts_images: bool | None = None
    # The session's title as the agent sets it (session_info_update, qwen's title notice): one line, bounded.
    session_title: str = ""
    # Every config option the agent offers (models, modes, thought level, booleans), as it last said.
    options: SessionOptions = field(default_factory=SessionOptions)
    # qwen's follow-up suggestion after the last turn (one line, bounded: offers/qwen_calls.py); None: none.
    suggestion: str | None = None

    def agent_text(self) -> str:
        """The agent's state as the user reads it: "stopped (not signed in)", "busy"."""
        return f"{self.agent_status} ({self.stopped_why})" if self.agent_status == "stopped" and self.stopped_why else self.agent_status

    @property
    def context_used(self) -> int | None:
        return self.usage.context_used

    @property
    def context_size(self) -> int | None:
        return self.usage.context_size

    def mode_name(self) -> str | None:
        name = next((m.name for m in self.modes if m.id == self.mode_id), self.mode_id)
        return None if name is None else display_text(name, NAME_MAX_CHARS)  # an id not in the list is shown: cleaned too

    def model_name(self) -> str | None:
        """The current model as people call it: its name in the agent's list,
        else read out of its id (never qwen's internal id)."""
        if self.model_id is None:
            return None
        return (next((m.name for m in self.models if m.id == self.model_id), None)
                or display_text(readable_model(self.model_id), NAME_MAX_CHARS))

    def adopt_session(self, raw: JsonObject) -> None:
        """What a new or loaded session's answer offers: modes, models, config options."""
        modes = raw.get("modes")
        if isinstance(modes, dict):
            self.modes = [
                Choice(str(m.get("id")), str(m.get("name") or m.get("id")), str(m.get("description") or ""))
                for m in modes.get("availableModes") or [] if isinstance(m, dict)
            ]
            self.mode_id = modes.get("currentModeId") or self.mode_id
        self.adopt_config_options(raw.get("configOptions"))
        models = raw.get("models")  # not in the ACP schema: qwen's own
        if isinstance(models, dict):
            self.models = [
                Choice(str(m.get("modelId")), str(m.get("name") or m.get("modelId")), str(m.get("description") or ""))
                for m in models.get("availableModels") or [] if isinstance(m, dict)
            ]
            self.model_id = models.get("currentModelId") or self.model_id
            limit = next(
                ((m.get("_meta") or {}).get("contextLimit") for m in models.get("availableModels") or []
                 if isinstance(m, dict) and m.get("modelId") == self.model_id),
                None,
            )
            self.usage.set_context_size(limit)

    def adopt_config_options(self, options: object) -> None:
        """All the config options the agent offers (bounded: session_options.py),
        and modes and models from its "mode"/"model" selects."""
        parsed = parse_options(options)
        if parsed is None:
            return
        self.options = parsed
        for category in ("mode", "model"):
            option = parsed.by_category(category)
            if option is None or option.kind != "select":
                continue
            self.config_ids[category] = option.id
            current = option.current if isinstance(option.current, str) else None
            if category == "mode":
                self.modes = self.modes or list(option.choices)
                self.mode_id = current or self.mode_id
            else:
                self.models = self.models or list(option.choices)
                self.model_id = current or self.model_id

    def adopt_update(self, update: object) -> bool:
        """A session update about the session itself (commands, mode, usage,
        config options, title); False for any other kind."""
        if isinstance(update, AvailableCommandsUpdate):
            self.commands = [Choice(c.name, c.name, c.description) for c in update.available_commands]
        elif isinstance(update, CurrentModeUpdate):
            self.mode_id = update.current_mode_id
        elif isinstance(update, UsageUpdate):
            self.usage.set_context(update.used, update.size)
        elif isinstance(update, ConfigOptionUpdate):
            self.adopt_config_options([o.model_dump(by_alias=True) for o in update.config_options])
        elif isinstance(update, SessionInfoUpdate):
            self._adopt_title(update.title)
        else:
            return False
        return True

    def _adopt_title(self, title: object) -> None:
        if isinstance(title, str):
            self.session_title = display_text(title, TITLE_MAX_CHARS)

    def adopt_usage(self, meta: dict[str, Any] | None, *, replaying: bool = False) -> bool:
        """A model request's tokens, from an answer chunk's `_meta` (qwen's own); False without them."""
        return self.usage.add_request(meta, replaying=replaying)

    def adopt_notification(self, method: str, params: JsonObject) -> bool:
        """qwen's mode, model and title notices; False for any other."""
        if method == MODE_NOTIFICATION and isinstance(params.get("currentModeId"), str):
            self.mode_id = params["currentModeId"]
        elif method == TITLE_NOTIFICATION:
            self._adopt_title(params.get("title"))
        elif method == MODEL_NOTIFICATION:
            model = params.get("currentModelId") or params.get("modelId")
            if isinstance(model, str):
                self.model_id = model
        else:
            return False
        return True
