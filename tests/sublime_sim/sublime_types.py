"""The fake runtime ``sublime_types`` module (type aliases only)."""

from __future__ import annotations

from typing import Any

DIP = float
Vector = tuple[float, float]
Point = int
Value = Any
CommandArgs = dict[str, Any] | None
Kind = tuple[int, str, str]
Event = dict
CompletionValue = Any
