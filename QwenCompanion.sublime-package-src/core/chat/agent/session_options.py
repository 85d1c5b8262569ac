"""The session's config options as the agent offers them (ACP
`configOptions` in its session/new|load|resume answers and
`config_option_update` notices): selects (models, modes, thought level,
grouped or not) and booleans, set through `session/set_config_option`.

Bounded whatever the agent sends: at most MAX_OPTIONS options of at most
MAX_CHOICES choices each, names cut (`Choice`), what was left out counted so
the quick panel can say so.

`SessionOptionSetter` sets them (and the mode and model of agents that
offer no config option for them), for a chat's core that owns it."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ... import threads
from ...display_text import display_text
from ...json_types import JsonObject
from .chat_thread import ChatThread, soon_reported

if TYPE_CHECKING:  # the protocol's module needs acp, which start-up must not load
    from .transport import AgentTransport

# The longest mode, model or command name (and description) kept from an
# agent: the status bar and the pickers show them on every refresh.
NAME_MAX_CHARS = 100
DESCRIPTION_MAX_CHARS = 300
MAX_OPTIONS = 50
MAX_CHOICES = 500
ON_OFF = ("on", "off")


@dataclass(frozen=True)
class Choice:
    id: str  # exactly as the agent sent it: it is sent back to choose this
    name: str
    description: str = ""

    def __post_init__(self) -> None:  # an agent's words, shown in the pickers and the status bar
        object.__setattr__(self, "name", display_text(self.name, NAME_MAX_CHARS))
        object.__setattr__(self, "description", display_text(self.description, DESCRIPTION_MAX_CHARS))


@dataclass(frozen=True)
class SessionOption:
    id: str  # exactly as the agent sent it: it is sent back to set this option
    name: str
    kind: str  # "select" | "boolean"
    current: str | bool | None
    choices: tuple[Choice, ...] = ()  # a select's values, groups flattened
    category: str = ""
    description: str = ""
    choices_left_out: int = 0

    def current_name(self) -> str:
        """The current value as people read it: a choice's name, "on"/"off"."""
        if isinstance(self.current, bool):
            return ON_OFF[0] if self.current else ON_OFF[1]
        if self.current is None:
            return "—"
        return next((c.name for c in self.choices if c.id == self.current), display_text(self.current, NAME_MAX_CHARS))

    def value_of(self, text: str) -> str | bool | None:
        """`text` as a value of this option (a choice's id or name; on/off/true/false
        for a boolean); None when it is none of them."""
        if self.kind == "boolean":
            lowered = text.strip().lower()
            return True if lowered in ("on", "true", "1") else False if lowered in ("off", "false", "0") else None
        return next((c.id for c in self.choices if text in (c.id, c.name)), None)


@dataclass(frozen=True)
class SessionOptions:
    options: tuple[SessionOption, ...] = ()
    left_out: int = 0  # options past MAX_OPTIONS

    def __iter__(self) -> Iterator[SessionOption]:
        return iter(self.options)

    def get(self, option_id: str) -> SessionOption | None:
        return next((o for o in self.options if o.id == option_id), None)

    def by_category(self, category: str) -> SessionOption | None:
        return next((o for o in self.options if o.category == category), None)

    def status_text(self) -> str:
        """The options besides mode and model (the status bar shows those already): "Thinking: high · Plan: on"."""
        return " · ".join(f"{o.name[:30]}: {o.current_name()[:30]}" for o in self.options
                          if o.category not in ("mode", "model"))[:200]


def _choices(raw: object) -> tuple[list[Choice], int]:
    """A select's values, groups flattened, at most MAX_CHOICES of them; and how many were left out."""
    found: list[Choice] = []
    left_out = 0
    for item in raw if isinstance(raw, list) else []:
        nested = item.get("options") if isinstance(item, dict) and "group" in item else None
        for each in nested if isinstance(nested, list) else [item]:
            if not isinstance(each, dict) or not isinstance(each.get("value"), str):
                continue
            if len(found) >= MAX_CHOICES:
                left_out += 1
                continue
            name = each.get("name")
            description = each.get("description")
            found.append(Choice(each["value"], name if isinstance(name, str) and name else each["value"],
                                description if isinstance(description, str) else ""))
    return found, left_out


def _text(value: Any) -> str:
    return display_text(value, DESCRIPTION_MAX_CHARS)


def parse_options(raw: object) -> SessionOptions | None:
    """The agent's `configOptions`; None when it sent none (not a list)."""
    if not isinstance(raw, list):
        return None
    options: list[SessionOption] = []
    left_out = 0
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or item.get("type") not in ("select", "boolean"):
            continue
        if len(options) >= MAX_OPTIONS:
            left_out += 1
            continue
        name = _text(item.get("name"))[:NAME_MAX_CHARS] or item["id"][:NAME_MAX_CHARS]
        current = item.get("currentValue")
        category = _text(item.get("category"))
        description = _text(item.get("description"))
        if item["type"] == "boolean":
            options.append(SessionOption(item["id"], name, "boolean", current if isinstance(current, bool) else None,
                                         category=category, description=description))
            continue
        choices, choices_left_out = _choices(item.get("options"))
        options.append(SessionOption(item["id"], name, "select", current if isinstance(current, str) else None,
                                     tuple(choices), category, description, choices_left_out))
    return SessionOptions(tuple(options), left_out)


class OptionsState(Protocol):
    """What the setter reads and sets of the chat's state (`ChatState`)."""

    session_id: str | None
    mode_id: str | None
    model_id: str | None
    config_ids: dict[str, str]

    def adopt_config_options(self, options: object) -> None: ...


class SessionOptionSetter:
    """A chat's mode, model and config options, set on its session (any
    thread: each call runs on the chat's thread and gives a Future)."""

    def __init__(self, thread: ChatThread, state: OptionsState,
                 ready: Callable[[], Coroutine[Any, Any, AgentTransport]],
                 reported: Callable[[Coroutine[Any, Any, None]], Coroutine[Any, Any, None]]) -> None:
        self.thread = thread
        self._state = state
        self._ready = ready  # the agent, its session open (started first when it is not)
        self.reported = reported

    @soon_reported
    @threads.on_chat_loop
    async def set_mode(self, mode_id: str) -> None:
        await self._choose("mode", mode_id, "session/set_mode", "modeId")
        self._state.mode_id = mode_id

    @soon_reported
    @threads.on_chat_loop
    async def set_model(self, model_id: str) -> None:
        await self._choose("model", model_id, "session/set_model", "modelId")
        self._state.model_id = model_id

    @soon_reported
    @threads.on_chat_loop
    async def set_option(self, option_id: str, value: str | bool) -> None:
        """One of the agent's config options (`state.options`), through session/set_config_option."""
        await self._request_option(await self._ready(), option_id, value)

    @threads.on_chat_loop
    async def _choose(self, category: str, value: str, method: str, field: str) -> None:
        """session/set_config_option, when the agent offers `category` as a
        config option (ACP's way); else the older `method` (its value as `field`)."""
        bridge = await self._ready()
        if category in self._state.config_ids:
            await self._request_option(bridge, self._state.config_ids[category], value)
        else:
            await bridge.request(method, {"sessionId": self._state.session_id, field: value})

    @threads.on_chat_loop
    async def _request_option(self, bridge: AgentTransport, option_id: str, value: str | bool) -> None:
        params: JsonObject = {"sessionId": self._state.session_id, "configId": option_id, "value": value}
        if isinstance(value, bool):
            params["type"] = "boolean"  # ACP tells a boolean's request by its type
        answer = await bridge.request("session/set_config_option", params)
        if isinstance(answer, dict):  # every option as it now is
            self._state.adopt_config_options(answer.get("configOptions"))
