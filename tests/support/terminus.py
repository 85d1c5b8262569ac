"""A stand-in for Terminus: its `terminus_open` records its arguments, and
`terminus_send_string` records what it types into a terminal (in the record
file's `.sent` sibling), failing as Terminus does when no live terminal
has the tag.

Like Terminus it does its work later on the async thread (`run` hands it to
`set_timeout_async`), leaving a tagged terminal view (a tab or an output
panel) that has the focus. Each call is one JSON line in the record file,
which is replaced whole, so a reader never sees a half-written line: the
arguments as given, and under `"run"` what Terminus would start from them
(randy3k/Terminus, terminus/commands.py, `TerminusOpenCommand.run_async`): a
`shell_cmd` becomes the platform's shell command (`cmd.exe /c` and the words
of `shlex_split` on Windows, `bash -l -c` on macOS, `bash -c` elsewhere),
then the command, `cwd` and `title` go through `sublime.expand_variables`
with the window's variables; `env` does not.
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
import shlex

import sublime
import sublime_plugin

RECORD = {record!r}


def shlex_split(shell_cmd):
    # terminus/utils.py: shlex.split(posix=False), each word's outer quotes dropped
    args = shlex.split(shell_cmd, posix=False)
    return [a[1:-1] if (a.startswith('"') and a.endswith('"')) or (a.startswith("'") and a.endswith("'")) else a
            for a in args]


def what_runs(window, cmd=None, shell_cmd=None, cwd=None, title=None):
    if cmd and shell_cmd:
        raise Exception("both `cmd` are `shell_cmd` are passed to terminus_open")
    if shell_cmd is not None:
        if not isinstance(shell_cmd, str):
            raise ValueError("shell_cmd should be a string")
        if sublime.platform() == "windows":
            cmd = [os.environ.get("COMSPEC", "cmd.exe"), "/c"] + shlex_split(shell_cmd)
        elif sublime.platform() == "osx":
            cmd = ["/usr/bin/env", "bash", "-l", "-c", shell_cmd]
        else:
            cmd = ["/usr/bin/env", "bash", "-c", shell_cmd]
    if cmd is None:
        raise Exception("both `cmd` are `shell_cmd` are empty")
    if isinstance(cmd, str):
        cmd = [cmd]
    variables = window.extract_variables()
    cwd = sublime.expand_variables(cwd, variables) if cwd else cwd
    if not cwd:
        cwd = window.folders()[0] if window.folders() else os.path.expanduser("~")
    return {{"cmd": sublime.expand_variables(cmd, variables), "cwd": cwd,
            "title": sublime.expand_variables(title, variables) if title else title}}


class TerminusOpenCommand(sublime_plugin.WindowCommand):
    def run(self, **kwargs):
        sublime.set_timeout_async(lambda: self.run_async(**kwargs))

    def run_async(self, **kwargs):
        runs = what_runs(self.window, kwargs.get("cmd"), kwargs.get("shell_cmd"), kwargs.get("cwd"), kwargs.get("title"))
        self.record({{**kwargs, "run": runs}})
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


def terminus_records(record: Path) -> list[dict[str, Any]]:
    """The `terminus_open` calls recorded so far, oldest first: each its
    arguments, and under `"run"` what Terminus starts from them ({cmd, cwd, title})."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines()]


def terminus_calls(record: Path) -> list[dict[str, Any]]:
    """The `terminus_open` arguments recorded so far, oldest first, as given."""
    return [{key: value for key, value in call.items() if key != "run"} for call in terminus_records(record)]


def terminus_runs(record: Path) -> list[dict[str, Any]]:
    """What Terminus started for each `terminus_open` so far ({cmd, cwd, title}, expanded), oldest first."""
    return [call["run"] for call in terminus_records(record)]
