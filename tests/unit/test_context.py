"""The per-window model of open files and the `ide/contextUpdate` payload."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from qwencompanion_src.core.companion.ide_context import ActiveDetails, ReadActive, ViewInfo, WindowFiles
from qwencompanion_src.core.companion.ide_messages import MAX_OPEN_FILES, IdeContext
from qwencompanion_src.core.context_rules import (
    DEFAULT_DEBOUNCE_MS,
    DEFAULT_EXCLUDED_PATTERNS,
    MAX_DEBOUNCE_MS,
    MAX_SELECTED_TEXT_BYTES,
    TRUNCATION_MARKER,
    ContextOptions,
    cut_selected_text,
    debounce_ms,
    selection_read_end,
)
from tests.conftest import SOURCE

CARET = ActiveDetails(line=3, character=7, selected_text="picked")


def read_caret(view_id: int, with_text: bool) -> ActiveDetails:
    return CARET


def payload(
    window: WindowFiles,
    options: ContextOptions = ContextOptions(),
    *,
    missing: frozenset[str] = frozenset(),
    read_active: ReadActive = read_caret,
) -> list[dict[str, Any]]:
    params = window.context(options, exists=lambda p: p not in missing, read_active=read_active).params()
    IdeContext.model_validate(params)  # what goes on the wire validates
    files: list[dict[str, Any]] = params["workspaceState"]["openFiles"]
    return files


def paths(window: WindowFiles, **kwargs: Any) -> list[str]:
    return [f["path"] for f in payload(window, **kwargs)]


def window_with(*paths_: str | None, now: int = 1000) -> WindowFiles:
    window = WindowFiles()
    window.sync([ViewInfo(i + 1, p) for i, p in enumerate(paths_)], now)
    return window


# --- ordering and focus -------------------------------------------------------


def test_most_recently_focused_first_and_only_it_active() -> None:
    window = window_with("/p/a.py", "/p/b.py", "/p/c.py")
    window.focus(1, 1100)
    window.focus(3, 1200)
    window.focus(2, 1300)
    window.activate(2, 1301)
    files = payload(window)
    assert [f["path"] for f in files] == ["/p/b.py", "/p/c.py", "/p/a.py"]
    assert [f["timestamp"] for f in files] == [1300, 1200, 1100]
    assert files[0] == {
        "path": "/p/b.py", "timestamp": 1300, "isActive": True,
        "cursor": {"line": 3, "character": 7}, "selectedText": "picked",
    }
    assert all(set(f) == {"path", "timestamp"} for f in files[1:])


def test_never_focused_files_follow_in_tab_order() -> None:
    window = window_with("/p/a", "/p/b", "/p/c", "/p/d")
    window.activate(3, 2000)
    assert paths(window) == ["/p/c", "/p/a", "/p/b", "/p/d"]


def test_active_file_focused_at_start_up_is_first() -> None:
    window = window_with("/p/a", "/p/b")
    window.activate(2, 5000)
    files = payload(window)
    assert files[0]["path"] == "/p/b" and files[0]["isActive"] is True
    assert files[0]["timestamp"] == 5000


def test_refocusing_the_active_file_keeps_its_timestamp() -> None:
    window = window_with("/p/a", "/p/b")
    window.focus(1, 1500)
    window.activate(1, 9999)
    assert payload(window)[0]["timestamp"] == 1500


def test_activate_refocuses_when_a_focus_event_was_missed() -> None:
    window = window_with("/p/a", "/p/b")
    window.focus(1, 1500)
    window.focus(2, 1600)
    window.activate(1, 1700)
    files = payload(window)
    assert [(f["path"], f["timestamp"]) for f in files] == [("/p/a", 1700), ("/p/b", 1600)]


def test_timestamps_never_increase_down_the_list() -> None:
    # A file opened in the background after the active one was focused must
    # not outrank it: the CLI sorts by timestamp and trusts only the first.
    window = window_with("/p/a")
    window.activate(1, 1000)
    window.sync([ViewInfo(1, "/p/a"), ViewInfo(2, "/p/late")], 5000)
    files = payload(window)
    assert [f["path"] for f in files] == ["/p/a", "/p/late"]
    assert files[1]["timestamp"] <= files[0]["timestamp"]


def test_wall_clock_going_back_keeps_focus_order() -> None:
    window = window_with("/p/a", "/p/b")
    window.focus(1, 2000)
    window.focus(2, 1000)  # clock stepped back
    window.activate(2, 1000)
    files = payload(window)
    assert [f["path"] for f in files] == ["/p/b", "/p/a"]
    assert files[0]["timestamp"] >= files[1]["timestamp"]


def test_at_most_ten_files_and_the_oldest_go() -> None:
    window = window_with(*(f"/p/f{i}" for i in range(15)))
    for i in range(15):
        window.focus(i + 1, 1000 + i)
    window.activate(15, 2000)
    listed = paths(window)
    assert len(listed) == MAX_OPEN_FILES
    assert listed == [f"/p/f{i}" for i in range(14, 4, -1)]


def test_same_file_in_two_views_is_listed_once() -> None:
    window = window_with("/p/a", "/p/a", "/p/b")
    window.focus(1, 1100)
    window.focus(2, 1200)
    window.activate(2, 1200)
    assert paths(window) == ["/p/a", "/p/b"]


def test_focus_on_a_view_that_is_no_file_is_ignored() -> None:
    window = window_with("/p/a", None)
    window.focus(1, 1100)
    window.focus(2, 1200)
    window.focus(99, 1300)
    window.activate(2, 1300)
    files = payload(window)
    assert files == [{"path": "/p/a", "timestamp": 1100}]


def test_untitled_active_means_no_active_file() -> None:
    window = window_with("/p/a", None)
    window.focus(1, 1100)
    window.activate(2, 1200)
    assert window.active_path is None
    assert "isActive" not in payload(window)[0]


def test_empty_window() -> None:
    window = WindowFiles()
    window.activate(None, 1000)
    assert payload(window) == []


# --- close, rename, delete ----------------------------------------------------


def test_closing_a_view_removes_its_file() -> None:
    window = window_with("/p/a", "/p/b")
    window.focus(1, 1100)
    window.focus(2, 1200)
    window.sync([ViewInfo(1, "/p/a")], 1300)
    window.activate(1, 1300)
    assert paths(window) == ["/p/a"]


def test_closing_one_of_two_views_keeps_the_file() -> None:
    window = window_with("/p/a", "/p/a")
    window.focus(2, 1100)
    window.sync([ViewInfo(1, "/p/a")], 1200)
    assert payload(window)[0]["timestamp"] == 1100


def test_closing_the_active_view_clears_active() -> None:
    window = window_with("/p/a", "/p/b")
    window.activate(2, 1100)
    window.sync([ViewInfo(1, "/p/a")], 1200)
    assert window.active_view is None


def test_rename_keeps_focus_history() -> None:
    window = window_with("/p/a", "/p/b")
    window.focus(1, 1100)
    window.focus(2, 1200)
    window.activate(2, 1200)
    window.sync([ViewInfo(1, "/p/renamed"), ViewInfo(2, "/p/b")], 1300)
    window.activate(2, 1300)
    files = payload(window)
    assert [(f["path"], f["timestamp"]) for f in files] == [("/p/b", 1200), ("/p/renamed", 1100)]


def test_save_as_of_an_untitled_view_adds_it() -> None:
    window = window_with("/p/a", None)
    window.focus(1, 1100)
    window.activate(2, 1200)
    window.sync([ViewInfo(1, "/p/a"), ViewInfo(2, "/p/new.txt")], 1300)
    window.activate(2, 1300)
    files = payload(window)
    assert files[0]["path"] == "/p/new.txt" and files[0]["isActive"] is True


def test_rename_onto_a_file_open_elsewhere_keeps_the_newer_history() -> None:
    window = window_with("/p/a", "/p/b")
    window.focus(1, 1100)
    window.focus(2, 1200)
    window.sync([ViewInfo(1, "/p/b"), ViewInfo(2, "/p/b")], 1300)
    assert payload(window) == [{"path": "/p/b", "timestamp": 1200}]


def test_deleted_files_are_left_out_until_they_exist_again() -> None:
    window = window_with("/p/a", "/p/b")
    window.focus(1, 1100)
    window.focus(2, 1200)
    window.activate(2, 1200)
    assert paths(window, missing=frozenset({"/p/b"})) == ["/p/a"]
    assert paths(window) == ["/p/b", "/p/a"]


def test_deleted_files_do_not_take_a_slot() -> None:
    window = window_with(*(f"/p/f{i}" for i in range(12)))
    gone = frozenset(f"/p/f{i}" for i in range(0, 12, 2))
    assert paths(window, missing=gone) == [f"/p/f{i}" for i in range(1, 12, 2)]


# --- privacy ------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/p/.env", "/p/.env.local", "/p/certs/server.pem", "/p/tls.KEY", "/home/u/.ssh/id_rsa",
     "/home/u/.ssh/id_rsa.pub", "/home/u/.ssh/id_ed25519", "C:\\Users\\u\\.env"],
)
def test_default_patterns_exclude_secrets(path: str) -> None:
    assert ContextOptions().excludes(path)


@pytest.mark.parametrize("path", ["/p/env.py", "/p/keys.py", "/p/.envrc", "/p/pem/readme.md", "/p/key"])
def test_default_patterns_keep_ordinary_files(path: str) -> None:
    assert not ContextOptions().excludes(path)


def test_patterns_match_the_full_path_too() -> None:
    options = ContextOptions(excluded_patterns=("*/secrets/*", "/abs/only.txt"))
    assert options.excludes("/p/secrets/a.txt")
    assert options.excludes("/abs/only.txt")
    assert not options.excludes("/p/public/a.txt")
    assert options.excludes("C:\\p\\secrets\\a.txt")


def test_excluded_files_never_appear_and_are_never_read() -> None:
    window = window_with("/p/a.py", "/p/.env")
    window.focus(1, 1100)
    window.focus(2, 1200)
    window.activate(2, 1200)
    read: list[int] = []

    def reader(view_id: int, with_text: bool) -> ActiveDetails:
        read.append(view_id)
        return CARET

    files = payload(window, read_active=reader)
    assert files == [{"path": "/p/a.py", "timestamp": 1100}]
    assert read == []


def test_selected_text_can_be_turned_off() -> None:
    window = window_with("/p/a")
    window.activate(1, 1000)
    asked: list[bool] = []

    def reader(view_id: int, with_text: bool) -> ActiveDetails:
        asked.append(with_text)
        return CARET

    files = payload(window, ContextOptions(send_selected_text=False), read_active=reader)
    assert asked == [False]
    assert files[0]["cursor"] == {"line": 3, "character": 7}
    assert "selectedText" not in files[0]


def test_trust_is_left_out_unless_set() -> None:
    window = window_with("/p/a")
    assert "isTrusted" not in window.context(ContextOptions(), exists=bool, read_active=read_caret).params()["workspaceState"]
    trusted = window.context(ContextOptions(trusted=False), exists=bool, read_active=read_caret)
    assert trusted.params()["workspaceState"]["isTrusted"] is False


def test_empty_selection_sends_no_text_and_gone_view_no_cursor() -> None:
    window = window_with("/p/a")
    window.activate(1, 1000)
    files = payload(window, read_active=lambda v, t: ActiveDetails(1, 1, None))
    assert files[0]["cursor"] == {"line": 1, "character": 1} and "selectedText" not in files[0]
    files = payload(window, read_active=lambda v, t: None)
    assert files[0] == {"path": "/p/a", "timestamp": 1000, "isActive": True}


# --- settings -----------------------------------------------------------------


def test_options_from_settings_and_bad_values() -> None:
    assert ContextOptions.from_settings({}) == ContextOptions()
    options = ContextOptions.from_settings(
        {"send_selected_text": False, "excluded_file_patterns": ["*.secret", 3, ""], "workspace_trusted": True}
    )
    assert options == ContextOptions(send_selected_text=False, excluded_patterns=("*.secret",), trusted=True)
    broken = ContextOptions.from_settings(
        {"send_selected_text": "no", "excluded_file_patterns": "*.pem", "workspace_trusted": "yes"}
    )
    assert broken == ContextOptions(excluded_patterns=DEFAULT_EXCLUDED_PATTERNS)
    assert ContextOptions.from_settings({"excluded_file_patterns": []}).excluded_patterns == ()


@pytest.mark.parametrize(
    ("value", "expected"),
    [(50, 50), (0, 0), (12.7, 12), (-5, 0), (10**9, MAX_DEBOUNCE_MS), (None, DEFAULT_DEBOUNCE_MS),
     ("80", DEFAULT_DEBOUNCE_MS), (True, DEFAULT_DEBOUNCE_MS)],
)
def test_debounce_setting(value: object, expected: int) -> None:
    assert debounce_ms(value) == expected


# --- the 16 KiB cut -----------------------------------------------------------


def test_selection_read_is_bounded_before_reading() -> None:
    assert selection_read_end(10, 20) == 20
    assert selection_read_end(10, 100_000_000) == 10 + MAX_SELECTED_TEXT_BYTES + 1


def test_small_text_is_kept_whole() -> None:
    text = "é" * (MAX_SELECTED_TEXT_BYTES // 2)  # exactly 16 KiB of UTF-8
    assert cut_selected_text(text) == text


@pytest.mark.parametrize("unit", ["a", "é", "€", "😀"])
def test_long_text_is_cut_to_16_kib_on_a_character_boundary(unit: str) -> None:
    text = unit * (MAX_SELECTED_TEXT_BYTES + 1)
    cut = cut_selected_text(text)
    assert cut.endswith(TRUNCATION_MARKER)
    assert len(cut.encode("utf-8")) <= MAX_SELECTED_TEXT_BYTES
    body = cut[: -len(TRUNCATION_MARKER)]
    assert body == unit * len(body)
    assert len(body.encode("utf-8")) > MAX_SELECTED_TEXT_BYTES - len(TRUNCATION_MARKER) - 4
    # The CLI truncates past 16384 UTF-16 units; we stay under it, so it adds nothing.
    assert len(cut.encode("utf-16-le")) // 2 <= 16384


@pytest.mark.parametrize("unit", ["é", "汉", "😀"])
def test_a_multibyte_selection_under_16384_characters_is_cut_by_its_utf8_bytes(unit: str) -> None:
    """Fewer characters than the limit, more bytes: the limit counts bytes."""
    text = unit * (MAX_SELECTED_TEXT_BYTES * 9 // 8 // len(unit.encode("utf-8")))
    assert len(text) < MAX_SELECTED_TEXT_BYTES < len(text.encode("utf-8"))
    cut = cut_selected_text(text)
    assert cut.endswith(TRUNCATION_MARKER) and len(cut.encode("utf-8")) <= MAX_SELECTED_TEXT_BYTES
    body = cut[: -len(TRUNCATION_MARKER)]
    assert body == unit * len(body)
    assert len(body.encode("utf-8")) > MAX_SELECTED_TEXT_BYTES - len(TRUNCATION_MARKER) - 4


def test_payload_cuts_the_selected_text() -> None:
    window = window_with("/p/a")
    window.activate(1, 1000)
    files = payload(window, read_active=lambda v, t: ActiveDetails(1, 1, "x" * 20000))
    text = files[0]["selectedText"]
    assert isinstance(text, str) and len(text.encode()) <= MAX_SELECTED_TEXT_BYTES


def test_shipped_settings_match_the_defaults() -> None:
    text = (SOURCE / "QwenCompanion.sublime-settings").read_text(encoding="utf-8")
    text = re.sub(r"^\s*//.*$", "", text, flags=re.MULTILINE)
    settings = json.loads(re.sub(r",(\s*[}\]])", r"\1", text))
    assert ContextOptions.from_settings(settings) == ContextOptions()
    assert debounce_ms(settings["context_debounce_ms"]) == DEFAULT_DEBOUNCE_MS
