"""The agent's forms (ACP `elicitation/create`) as the editor asks them: the
requested schema read into fields, each checked as the schema says (required,
lengths, bounds, pattern, format, enum), and the answer the agent gets
(`accept` with the content, `decline`, `cancel`). A URL request is kept to
http(s). Everything the agent sends is bounded here, before any of it
reaches a panel: a form too big to ask is refused with the reason, texts too
long to show are cut."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from re import _parser  # type: ignore[attr-defined]  # the stdlib's own parse of a pattern
from typing import Any, Literal
from urllib.parse import urlsplit

from acp import CreateElicitationRequest
from acp.schema import (
    AcceptElicitationResponse,
    CancelElicitationResponse,
    DeclineElicitationResponse,
)
from pydantic import TypeAdapter, ValidationError

from ...json_types import JsonObject

MAX_FIELDS = 100  # more is no form a user fills in panel by panel
# The options of all the form's enums and multi-selects together: the SDK's
# models read them holding the GIL (1,000 take about 15 ms, 100,000 over a second).
MAX_CHOICES = 1_000
MAX_SHOWN = 300  # characters of a title, description or option shown; the rest is cut
MAX_MESSAGE = 2_000  # characters of the form's message shown
MAX_PATTERN = 500
MAX_DEFAULT = 10_000  # characters of a default put in an input panel
# A pattern runs on the main thread, where Python's regex engine holds the GIL
# and cannot be interrupted: a thread with a timeout would leave the match
# spinning, and a process per Enter is slow to start on Windows. So a static
# check decides, conservatively. Backtracking grows with the places a match
# may choose (a repetition of varying count, `?` too, or an alternation): one
# under a repetition makes it exponential (`(a|a)*`, `(a+)+`, `(.*a){20}`),
# many in a row too (`a?a?…a{25}`). A pattern is checked only if no repetition
# encloses an alternation or another repetition, it has at most
# MAX_PATTERN_CHOICES such places, and no back-reference or lookaround; its
# backtracking then stays polynomial, on values of at most PATTERN_VALUE_LIMIT
# characters (about 30 ms at worst). Others are shown to the user and left for
# the agent to check.
MAX_PATTERN_CHOICES = 2
PATTERN_VALUE_LIMIT = 200
REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")  # the parsed pattern's repetitions
FORMATS = ("email", "uri", "date", "date-time")
URL_SCHEMES = ("http", "https")

FieldKind = Literal["string", "number", "integer", "boolean", "choice", "choices"]
Action = Literal["accept", "decline", "cancel"]
REQUESTS: TypeAdapter[CreateElicitationRequest] = TypeAdapter(CreateElicitationRequest)  # built once: a union of six models


class FormRefused(ValueError):
    """The agent's request cannot be asked; the message says why (the agent sees it)."""


class Invalid(ValueError):
    """The user's value breaks the field's schema; the message says how."""


def shown(text: object, limit: int = MAX_SHOWN) -> str:
    """`text` on one line, cut to `limit` characters."""
    one_line = " ".join(str(text)[: limit * 4].split())  # a 30 MB title is not split whole
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


@dataclass(frozen=True)
class Choice:
    value: str
    title: str


@dataclass(frozen=True)
class FormField:
    name: str
    kind: FieldKind
    title: str
    description: str = ""
    required: bool = False
    default: Any = None
    choices: tuple[Choice, ...] = ()
    min_length: int | None = None
    max_length: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    pattern: str | None = None
    checked_pattern: re.Pattern[str] | None = None  # None with a pattern: the agent checks it
    format: str | None = None
    min_items: int | None = None
    max_items: int | None = None

    @property
    def label(self) -> str:
        return f"{self.title}{'' if self.required else ' (optional)'}"

    def hint(self) -> str:
        """What the schema asks of the value, for the panel's caption."""
        rules: list[str] = []
        if self.min_length is not None:
            rules.append(f"at least {self.min_length} characters")
        if self.max_length is not None:
            rules.append(f"at most {self.max_length} characters")
        if self.minimum is not None:
            rules.append(f"≥ {_number_text(self.minimum)}")
        if self.maximum is not None:
            rules.append(f"≤ {_number_text(self.maximum)}")
        if self.pattern is not None:
            checked = "" if self.checked_pattern is not None else ", checked by the agent"
            rules.append(f"matching {shown(self.pattern, 80)}{checked}")
        if self.format is not None:
            rules.append(f"a {self.format}")
        if self.kind == "integer":
            rules.append("a whole number")
        elif self.kind == "number":
            rules.append("a number")
        return "; ".join(rules)

    def prefill(self) -> str:
        """The input panel's initial text: the default, if any."""
        if self.default is None or isinstance(self.default, bool):
            return ""
        return _number_text(self.default) if isinstance(self.default, (int, float)) else str(self.default)

    def check_text(self, text: str) -> str | int | float | None:
        """The value the user typed, checked; None leaves an optional field out."""
        if text == "":
            if self.required:
                raise Invalid("a value is required")
            return None
        if self.kind == "integer":
            try:
                number: int | float = int(text.strip())
            except ValueError:
                raise Invalid("not a whole number") from None
            return self._in_bounds(number)
        if self.kind == "number":
            try:
                number = float(text.strip())
            except ValueError:
                raise Invalid("not a number") from None
            if not math.isfinite(number):
                raise Invalid("not a finite number")
            return self._in_bounds(number)
        return self._string(text)

    def _in_bounds(self, number: int | float) -> int | float:
        if self.minimum is not None and number < self.minimum:
            raise Invalid(f"less than {_number_text(self.minimum)}")
        if self.maximum is not None and number > self.maximum:
            raise Invalid(f"more than {_number_text(self.maximum)}")
        return number

    def _string(self, text: str) -> str:
        if self.min_length is not None and len(text) < self.min_length:
            raise Invalid(f"shorter than {self.min_length} characters")
        if self.max_length is not None and len(text) > self.max_length:
            raise Invalid(f"longer than {self.max_length} characters")
        if self.checked_pattern is not None:
            if len(text) > PATTERN_VALUE_LIMIT:
                raise Invalid(f"longer than {PATTERN_VALUE_LIMIT} characters, too long to check "
                              "against the form's pattern")
            if self.checked_pattern.search(text) is None:
                raise Invalid(f"does not match the pattern {shown(self.pattern, 80)}")
        if self.format is not None and not _has_format(text, self.format):
            raise Invalid(f"not a valid {self.format}")
        return text

    def check_choices(self, values: list[str]) -> list[str]:
        """A multi-select's picks, checked against its item counts."""
        if self.required and not values:
            raise Invalid("pick at least one")
        if self.min_items is not None and len(values) < self.min_items:
            raise Invalid(f"pick at least {self.min_items}")
        if self.max_items is not None and len(values) > self.max_items:
            raise Invalid(f"pick at most {self.max_items}")
        return values

    def check_value(self, value: Any) -> Any:
        """A value given whole (the driver's `elicitation {values}`), checked as
        the panels check it; None leaves an optional field out."""
        if value is None:
            if self.required:
                raise Invalid("a value is required")
            return None
        if self.kind == "boolean":
            if not isinstance(value, bool):
                raise Invalid("not true or false")
            return value
        if self.kind == "choice":
            if value not in [choice.value for choice in self.choices]:
                raise Invalid("not one of the choices")
            return value
        if self.kind == "choices":
            allowed = {choice.value for choice in self.choices}
            if not isinstance(value, list) or any(item not in allowed for item in value):
                raise Invalid("not a list of the choices")
            return self.check_choices(value)
        if self.kind in ("integer", "number"):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise Invalid("not a number")
            return self.check_text(str(value))
        if not isinstance(value, str):
            raise Invalid("not a text")
        return self.check_text(value)


@dataclass(frozen=True)
class Form:
    message: str
    fields: tuple[FormField, ...]
    title: str = ""


@dataclass(frozen=True)
class UrlRequest:
    message: str
    url: str
    elicitation_id: str


def read_request(params: JsonObject) -> Form | UrlRequest:
    """The agent's `elicitation/create` params as a form or a URL to open;
    FormRefused says why it cannot be asked."""
    schema = params.get("requestedSchema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    # Counted before the SDK's models read them: 10,000 fields are refused, not parsed.
    if isinstance(properties, dict) and len(properties) > MAX_FIELDS:
        raise FormRefused(f"the form has {len(properties)} fields; this editor asks at most {MAX_FIELDS}")
    choices = sum(_raw_choices(prop) for prop in properties.values()) if isinstance(properties, dict) else 0
    if choices > MAX_CHOICES:
        raise FormRefused(f"the form has {choices} choices in all; this editor shows at most {MAX_CHOICES}")
    try:
        request = REQUESTS.validate_python(params)
    except ValidationError as error:
        raise FormRefused(f"the request is not a valid elicitation: {shown(error, 500)}") from None
    if request.mode == "url":
        # The link as the agent wrote it, not as pydantic's URL type rewrites it: that one is checked and opened.
        return UrlRequest(shown(request.message, MAX_MESSAGE), check_url(str(params.get("url"))),
                          request.elicitation_id)
    if request.mode != "form":
        raise FormRefused(f"this editor asks forms and URLs, not {shown(request.mode, 40)!r}")
    requested = request.requested_schema
    required = set(requested.required or ())
    fields = tuple(_read_field(name, prop.model_dump(by_alias=True), name in required)
                   for name, prop in (requested.properties or {}).items())
    if not fields:
        raise FormRefused("the form has no fields")
    return Form(shown(request.message, MAX_MESSAGE), fields, shown(requested.title or ""))


def check_url(url: str) -> str:
    """`url` if it is one the browser may open: http(s) with a host."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in URL_SCHEMES or not parts.hostname:
        raise FormRefused(f"only http and https links are opened, not {shown(url, 100)!r}")
    return url


def _read_field(name: str, prop: dict[str, Any], required: bool) -> FormField:
    kind = prop.get("type")
    title = shown(prop.get("title") or name)
    common: dict[str, Any] = {"name": name, "title": title, "description": shown(prop.get("description") or ""),
                              "required": required}
    if kind == "boolean":
        return FormField(kind="boolean", default=prop.get("default"), **common)
    if kind in ("number", "integer"):
        return FormField(kind=kind, default=prop.get("default"), minimum=prop.get("minimum"),
                         maximum=prop.get("maximum"), **common)
    if kind == "array":
        items = prop.get("items") or {}
        choices = _choices(name, items.get("enum"), items.get("anyOf"))
        if not choices:
            raise FormRefused(f"the field {shown(name, 80)!r} is a list of {shown(items.get('type'), 40)!r} "
                              "items; this editor asks lists of choices only")
        return FormField(kind="choices", choices=choices, default=prop.get("default"),
                         min_items=prop.get("minItems"), max_items=prop.get("maxItems"), **common)
    if kind != "string":
        raise FormRefused(f"the field {shown(name, 80)!r} is of type {shown(kind, 40)!r}; "
                          "this editor asks strings, numbers, booleans and choices")
    choices = _choices(name, prop.get("enum"), prop.get("oneOf"))
    if choices:
        return FormField(kind="choice", choices=choices, default=prop.get("default"), **common)
    default = prop.get("default")
    if isinstance(default, str) and len(default) > MAX_DEFAULT:
        raise FormRefused(f"the field {shown(name, 80)!r} has a default of {len(default)} characters; "
                          f"at most {MAX_DEFAULT} are put in a panel")
    pattern = prop.get("pattern")
    fmt = prop.get("format")
    return FormField(kind="string", default=default, min_length=prop.get("minLength"),
                     max_length=prop.get("maxLength"), pattern=pattern,
                     checked_pattern=_safe_pattern(name, pattern) if pattern is not None else None,
                     format=fmt if fmt in FORMATS else None, **common)


def _raw_choices(prop: object) -> int:
    """How many options a property of the request, as sent, lists."""
    if not isinstance(prop, dict):
        return 0
    items = prop.get("items")
    lists = [prop.get("enum"), prop.get("oneOf")] + ([items.get("enum"), items.get("anyOf")] if isinstance(items, dict) else [])
    return sum(len(each) for each in lists if isinstance(each, list))


def _choices(name: str, enum: list[str] | None, titled: list[dict[str, Any]] | None) -> tuple[Choice, ...]:
    if titled:
        return tuple(Choice(option["const"], shown(option["title"])) for option in titled)
    return tuple(Choice(value, shown(value)) for value in enum or ())


def _safe_pattern(name: str, pattern: str) -> re.Pattern[str] | None:
    """The compiled pattern if checking it is bounded (see MAX_PATTERN_CHOICES), else None."""
    if len(pattern) > MAX_PATTERN:
        raise FormRefused(f"the field {shown(name, 80)!r} has a pattern of {len(pattern)} characters; "
                          f"at most {MAX_PATTERN} are taken")
    try:
        parsed = _parser.parse(pattern)
        compiled = re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as error:
        raise FormRefused(f"the field {shown(name, 80)!r} has a pattern Python cannot read: {error}") from None
    choices = 0
    for kind, argument, depth in _pattern_nodes(parsed, 0):
        if kind in ("GROUPREF", "GROUPREF_EXISTS", "ASSERT", "ASSERT_NOT"):
            return None
        if kind in ("BRANCH", *REPEATS) and depth > 0:  # a choice or a repetition under a repetition
            return None
        if kind == "BRANCH" or (kind in REPEATS and argument[0] != argument[1]):
            choices += 1
            if choices > MAX_PATTERN_CHOICES:
                return None
    return compiled


def _pattern_nodes(nodes: Any, depth: int) -> Iterator[tuple[str, Any, int]]:
    """(kind, argument, how many repetitions enclose it) of every node of a parsed pattern."""
    for opcode, argument in nodes:
        kind = str(opcode)
        yield kind, argument, depth
        if kind in REPEATS:
            yield from _pattern_nodes(argument[2], depth + (1 if argument[1] > 1 else 0))
        elif kind in ("SUBPATTERN", "ATOMIC_GROUP"):
            yield from _pattern_nodes(argument[-1], depth)
        elif kind == "BRANCH":
            for branch in argument[1]:
                yield from _pattern_nodes(branch, depth)
        elif kind == "GROUPREF_EXISTS":
            yield from _pattern_nodes(argument[1], depth)


def _has_format(text: str, fmt: str) -> bool:
    if fmt == "email":
        local, at, domain = text.rpartition("@")
        return bool(at and local and "." in domain.strip(".") and not any(c.isspace() for c in text))
    if fmt == "uri":
        parts = urlsplit(text)
        return bool(parts.scheme and (parts.netloc or parts.path))
    try:
        (date.fromisoformat if fmt == "date" else datetime.fromisoformat)(text)
    except ValueError:
        return False
    return True


def _number_text(number: float) -> str:
    return str(int(number)) if isinstance(number, float) and number.is_integer() else str(number)


@dataclass
class FormAnswers:
    """The user's way through a form: one field at a time, in the schema's order."""

    form: Form
    values: dict[str, Any] = field(default_factory=dict)
    position: int = 0

    @property
    def current(self) -> FormField | None:
        return self.form.fields[self.position] if self.position < len(self.form.fields) else None

    def give(self, value: Any) -> None:
        """The current field's checked value (None: left out); on to the next."""
        current = self.current
        assert current is not None
        if value is not None:
            self.values[current.name] = value
        self.position += 1


def content_of(form: Form, given: JsonObject) -> dict[str, Any]:
    """Values given all at once, each checked; Invalid names the first bad field."""
    unknown = [name for name in given if name not in {f.name for f in form.fields}]
    if unknown:
        raise Invalid(f"the form has no field {shown(unknown[0], 80)!r}")
    content: dict[str, Any] = {}
    for each in form.fields:
        try:
            value = each.check_value(given.get(each.name))
        except Invalid as error:
            raise Invalid(f"{each.title}: {error}") from None
        if value is not None:
            content[each.name] = value
    return content


def answer(action: Action, content: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `elicitation/create` result as it goes on the wire."""
    response: AcceptElicitationResponse | DeclineElicitationResponse | CancelElicitationResponse
    if action == "accept":
        response = AcceptElicitationResponse(action="accept", content=content)
    elif action == "decline":
        response = DeclineElicitationResponse(action="decline")
    else:
        response = CancelElicitationResponse(action="cancel")
    return response.model_dump(by_alias=True, exclude_none=True)


def render_form(form: Form | UrlRequest, outcome: str | None = None) -> str:
    """The form's block in the transcript: what is asked, then how it was answered."""
    if isinstance(form, UrlRequest):
        head = f"**Link**: {form.message}\n`{shown(form.url, 200)}`"
    else:
        names = ", ".join(f.title for f in form.fields[:10]) + (" …" if len(form.fields) > 10 else "")
        head = f"**Form**{': ' + form.title if form.title else ''}: {form.message}\nFields: {names}"
    if outcome is None:
        return f"{head}\n(Qwen Code: Answer Form… to fill it in; Esc in it cancels)\n\n"
    return f"{head}\n→ {outcome}\n\n"
