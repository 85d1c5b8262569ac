"""`search_project` in a window: its folders, the unsaved text of its open
files, the user's privacy patterns and Sublime's own file filters, handed to
the core's search (`core/ide_tools/project_search.py`).

Runs on the server's thread of ours: Sublime's API is thread-safe, and
nothing here waits for the main thread.
"""

from __future__ import annotations

import sublime

from ...core.context_rules import ContextOptions
from ...core.ide_tools.answers import SearchRequest
from ...core.ide_tools.project_search import MAX_FILE_BYTES, SearchQuery, SearchScope, SublimePatterns, search_project
from ...core.ide_tools.search_patterns import compile_query
from ..editor import view_text
from ..settings import preferences, userprefs


def search_window(window: sublime.Window, request: SearchRequest) -> str:
    pattern = compile_query(request.query, regex=request.regex, case_sensitive=request.case_sensitive)
    query = SearchQuery(pattern, None if request.regex else request.query, request.glob, request.max_results)
    scope = SearchScope(
        folders=window.folders(),
        unsaved={name: view_text(view) for view in window.views()
                 if (name := view.file_name()) and view.is_dirty() and view.size() <= MAX_FILE_BYTES},
        privacy=ContextOptions.from_settings(userprefs().context_values()),
        sublime_patterns=sublime_patterns(window),
    )
    return search_project(query, scope)


def sublime_patterns(window: sublime.Window) -> SublimePatterns:
    """Sublime's filters: the preferences', and those the project's folders add."""
    prefs = preferences()
    folder, file, binary = (list(prefs.folder_exclude_patterns), list(prefs.file_exclude_patterns),
                            list(prefs.binary_file_patterns))
    project = window.project_data()
    entries = project.get("folders", []) if isinstance(project, dict) else []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        for key, into in (("folder_exclude_patterns", folder), ("file_exclude_patterns", file),
                          ("binary_file_patterns", binary)):
            value = entry.get(key)
            if isinstance(value, list):
                into.extend(item for item in value if isinstance(item, str))
    return SublimePatterns(tuple(folder), tuple(file), tuple(binary))
