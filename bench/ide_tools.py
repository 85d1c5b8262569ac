"""The IDE tools rows of `make bench`: each tool called over HTTP as the CLI
calls it, on a 5,000-line Python file from Sublime's index
(bench/ide_tools_host.py, a process per round). No peer: no other editor
companion offers these tools."""

from __future__ import annotations

from pathlib import Path

from bench.chat import floats, run_host
from bench.run import Row, Samples, progress

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
        result = run_host("bench.ide_tools_host", workdir / f"ide-tools-{number}", CALLS)
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
