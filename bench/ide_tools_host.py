"""The IDE tools under benchmark: the built QwenCompanion in the simulated
Sublime host (a process of its own, as Sublime's plugin host is), called the
way the CLI calls them (HTTP, the endpoint of the `--mcp-config` file). Prints
one JSON line:

    python -m bench.ide_tools_host WORKDIR CALLS

- "<case>_ms": each call's round trip at the client, per case (a tool on the
  5,000-line file open in a view, and get_document_symbols on it closed);
- "<case>_main_ms": the main thread's CPU time during each call.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.host import BUILT_PACKAGE, PACKAGE
from tests.sublime_sim import SimulatedHost
from tests.support.mcp_client import McpClient

LINES = 5_000


def big_module() -> str:
    """LINES lines of Python: classes of four methods, and functions that call them."""
    parts = []
    for number in range(LINES // 25):
        parts.append(
            f"class Widget{number}:\n"
            f"    def __init__(self):\n        self.value = {number}\n\n"
            f"    def grow(self, by):\n        self.value += by\n        return self.value\n\n"
            f"    def shrink(self, by):\n        self.value -= by\n        return self.value\n\n"
            f"    def show(self):\n        return str(self.value)\n\n\n"
            f"def make_widget{number}():\n    widget = Widget{number}()\n    widget.grow(1)\n"
            f"    return widget.show()\n\n\n"
        )
    text = "".join(parts)
    return text + "\n" * max(0, LINES - text.count("\n"))


def tools_client(host: SimulatedHost) -> McpClient:
    """Load the package and connect to the window's IDE tools as the CLI does."""
    host.load_package(PACKAGE)
    companion = host.wait_for(
        lambda: sys.modules[f"{PACKAGE}.plugin.companion.companions"].companions.get(host.window), timeout=30)
    server = json.loads(companion.mcp_config_file.read_text())["mcpServers"]["sublime-ide-tools"]
    token = server["headers"]["Authorization"].removeprefix("Bearer ")
    return McpClient(companion.port, token, "bench", path="/ide-tools/mcp").connect(stream=False)


def main(workdir: Path, calls: int) -> dict[str, Any]:
    host = SimulatedHost(workdir / "Packages", check_threads=False)
    try:
        host.install_package(BUILT_PACKAGE, PACKAGE)
        folder = workdir / "project"
        folder.mkdir(exist_ok=True)
        source = folder / "widgets.py"
        source.write_text(big_module())
        host.user.set_folders([str(folder)])
        client = tools_client(host)
        main_clock = time.pthread_getcpuclockid(host.main_thread.ident)

        def measure(tool: str, arguments: dict[str, Any]) -> tuple[list[float], list[float]]:
            rounds, main_cpu = [], []
            for _ in range(calls):
                cpu = time.clock_gettime(main_clock)
                start = time.perf_counter()
                result = client.call(tool, arguments)
                rounds.append((time.perf_counter() - start) * 1000)
                main_cpu.append((time.clock_gettime(main_clock) - cpu) * 1000)
                if result.get("isError"):
                    raise RuntimeError(f"{tool}: {result['content'][0]['text']}")
            return rounds, main_cpu

        lines = source.read_text().splitlines()
        call_line = next(i for i, line in enumerate(lines, 1) if "widget = Widget100()" in line)
        at_call = {"abspath": str(source), "line": call_line, "character": lines[call_line - 1].index("Widget") + 2}
        results: dict[str, Any] = {}
        results["closed_symbols_ms"], results["closed_symbols_main_ms"] = measure(
            "get_document_symbols", {"abspath": str(source)})
        host.user.open_file(source)
        host.wait_idle()
        cases = {
            "symbols": ("get_document_symbols", {"abspath": str(source)}),
            "definitions": ("find_def_locations", at_call),
            "type_definitions": ("find_type_def_locations", at_call),
            "diagnostics": ("get_diagnostics", {"abspath": str(source)}),
        }
        for case, (tool, arguments) in cases.items():
            results[f"{case}_ms"], results[f"{case}_main_ms"] = measure(tool, arguments)
        return results
    finally:
        host.close()


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), int(sys.argv[2]))), flush=True)
