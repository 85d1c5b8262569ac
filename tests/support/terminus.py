"""A stand-in for Terminus: its `terminus_open` records its arguments, and
`terminus_send_string` records what it types into a terminal (in the record
file's `.sent` sibling), failing as Terminus does when no live terminal
has the tag.

Like Terminus it does its work later on the async thread (`run` hands it to
`set_timeout_async`), leaving a tagged terminal view (a tab or an output
panel) that has the focus. Each call is one JSON line in the record file,
which is replaced whole, so a reader never sees a half-written line.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from tests.sublime_sim import SimulatedHost

FAKE_TERMINUS = '''
import json
import os

import sublime
import sublime_plugin

RECORD = {record!r}


class TerminusOpenCommand(sublime_plugin.WindowCommand):
    def run(self, **kwargs):
        sublime.set_timeout_async(lambda: self.run_async(**kwargs))

    def run_async(self, **kwargs):
        self.record(kwargs)
        if kwargs.get("show_in_panel"):
            view = self.window.create_output_panel(kwargs["panel_name"])
            self.window.run_command("show_panel", {{"panel": "output." + kwargs["panel_name"]}})
        else:
            view = self.window.new_file()
        view.settings().set("terminus_view", True)
        view.settings().set("terminus_view.tag", kwargs.get("tag"))
        self.window.focus_view(view)

    def record(self, kwargs):
        record(RECORD, kwargs)


class TerminusSendStringCommand(sublime_plugin.WindowCommand):
    def run(self, string, tag=None, visible_only=False, bracketed=False):
        views = self.window.views() + [self.window.find_output_panel(p.replace("output.", "")) for p in self.window.panels()]
        if not any(v is not None and v.settings().get("terminus_view.tag") == tag for v in views):
            raise Exception("no terminal found")
        record(RECORD + ".sent", {{"string": string, "tag": tag}})


def record(path, kwargs):
    previous = ""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            previous = handle.read()
    with open(path + ".part", "w", encoding="utf-8") as handle:
        handle.write(previous + json.dumps(kwargs) + "\\n")
    os.replace(path + ".part", path)
'''


def install_terminus(host: SimulatedHost, record: Path) -> None:
    """Install and load the stand-in Terminus, recording into `record`."""
    terminus_dir = host.packages_dir / "Terminus"
    terminus_dir.mkdir()
    (terminus_dir / "Terminus.sublime-settings").write_text("{}\n")
    (terminus_dir / "fake_terminus.py").write_text(textwrap.dedent(FAKE_TERMINUS.format(record=str(record))))
    host.load_package("Terminus")


def mcp_config_option(host: SimulatedHost) -> str:
    """` --mcp-config <file>`: what Open in Terminal adds after a string
    command for the window's IDE tools (the path has no character a shell
    would quote)."""
    import sys

    companion = sys.modules["QwenCompanion.plugin.companion.companions"].companions.get(host.window)
    return f" --mcp-config {companion.mcp_config_file}"


def terminus_sent(record: Path) -> list[dict[str, Any]]:
    """What `terminus_send_string` typed so far ({string, tag}), oldest first."""
    return terminus_calls(record.with_name(record.name + ".sent"))


def terminus_calls(record: Path) -> list[dict[str, Any]]:
    """The `terminus_open` arguments recorded so far, oldest first."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines()]
