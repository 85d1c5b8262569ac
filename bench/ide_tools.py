"""The IDE tools rows of `make bench`: each tool called over HTTP as the CLI
calls it, on a 5,000-line Python file from Sublime's index
(bench/ide_tools_host.py, a process per round). No peer: no other editor
companion offers these tools."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from bench.chat import _run, floats
from bench.run import ROOT, Row, Samples, progress

CALLS = 100  # per tool and round
CASES = {
    "closed_symbols": "get_document_symbols, the file not open (read into a hidden panel)",
    "symbols": "get_document_symbols, the file open",
    "definitions": "find_def_locations (across the project)",
    "type_definitions": "find_type_def_locations (empty: no language server)",
    "diagnostics": "get_diagnostics (empty: no language server)",
}


def ide_tools_rows(rounds: int, workdir: Path) -> list[Row]:
    answer = {case: Samples() for case in CASES}
    main = {case: Samples() for case in CASES}
    progress("IDE tools on a 5,000-line file")
    for number in range(rounds):
        folder = workdir / f"ide-tools-{number}"
        folder.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "HOME": str(folder)}
        env.pop("QWEN_HOME", None)
        result = _run([sys.executable, "-m", "bench.ide_tools_host", str(folder), str(CALLS)], ROOT, env)
        for case in CASES:
            answer[case].add("ours", floats(result[f"{case}_ms"]))
            main[case].add("ours", floats(result[f"{case}_main_ms"]))
    rows = [
        Row("8", f"IDE tool answered at the client: {label}", "ms", answer[case], "≤ 20 ms",
            lambda p50, ratio: p50 <= 20)
        for case, label in CASES.items()
    ]
    rows += [
        Row("8", f"IDE tool: main-thread CPU time per call, {label}", "ms", main[case], "≤ 5 ms",
            lambda p50, ratio: p50 <= 5)
        for case, label in CASES.items()
    ]
    return rows
