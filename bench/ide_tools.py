"""The IDE tools rows of `make bench`: each tool called over HTTP as the CLI
calls it, on a 5,000-line Python file from Sublime's index
(bench/ide_tools_host.py, a process per round). No peer: no other editor
companion offers these tools. The project-wide tools on their own projects
(bench/ide_search_host.py): search_project against `git grep -n` (and `rg
-n` where installed) run as processes for the same word, find_references,
and get_open_editors' main-thread time."""

from __future__ import annotations

from pathlib import Path

from bench.chat import floats, run_host
from bench.run import Row, Samples, progress

CALLS = 100  # per tool and round
SEARCH_CALLS = 10  # per round: a search of 10,000 files is not a round trip
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
    return rows + project_rows(rounds, workdir)


def project_rows(rounds: int, workdir: Path) -> list[Row]:
    search, against_rg, references, index, editors = Samples(), Samples(), Samples(), Samples(), Samples()
    progress("IDE tools over a 10,000-file repository")
    for number in range(rounds):
        result = run_host("bench.ide_search_host", workdir / f"ide-search-{number}", SEARCH_CALLS)
        if not result["same_matches"]:
            raise RuntimeError("search_project and git grep found different matches")
        search.add("ours", floats(result["search_ms"]))
        search.add("peer", floats(result["git_grep_ms"]))
        if result["rg_ms"]:
            against_rg.add("ours", floats(result["search_ms"]))
            against_rg.add("peer", floats(result["rg_ms"]))
        references.add("ours", floats(result["references_ms"]))
        index.add("ours", floats(result["references_index_ms"]))
        editors.add("ours", floats(result["editors_main_ms"]))
    rows = [
        Row("8", "search_project, a word in 10,000 files (peer: git grep -n, same matches)", "ms", search,
            "≤ 1.5× git grep", lambda p50, ratio: ratio is not None and ratio <= 1.5),
        Row("8", "find_references by name, 5,000 indexed symbols", "ms", references, "≤ 100 ms",
            lambda p50, ratio: p50 <= 100),
        Row("8", "the simulator's symbol_locations alone for that name (its index)", "ms", index,
            "—", lambda p50, ratio: None),
        Row("8", "get_open_editors with 200 open views: main-thread CPU time", "ms", editors, "≤ 5 ms",
            lambda p50, ratio: p50 <= 5),
    ]
    if against_rg.values["ours"]:
        rows.insert(1, Row("8", "search_project, a word in 10,000 files (peer: rg -n)", "ms", against_rg,
                           "≤ 1.5× rg", lambda p50, ratio: ratio is not None and ratio <= 1.5))
    return rows
