"""`search_project` in the core: which files it reads (git's list inside a
repository, Sublime's filters outside one, never an excluded, binary,
special or out-of-folder file), unsaved text first, the agent's regex
refused when it could run unbounded, and every bound of the answer."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from qwencompanion_src.core.context_rules import ContextOptions
from qwencompanion_src.core.ide_tools.answers import ToolRefusal
from qwencompanion_src.core.ide_tools.project_search import (
    MAX_ANSWER_BYTES,
    SearchQuery,
    SearchScope,
    SublimePatterns,
    search_project,
)
from qwencompanion_src.core.ide_tools.search_patterns import compile_query


def search(folders: list[Path], query: str, *, regex: bool = False, case_sensitive: bool = True,
           glob: str | None = None, max_results: int = 200, unsaved: dict[Path, str] | None = None,
           patterns: SublimePatterns | None = None, seconds: float = 10.0,
           privacy: ContextOptions | None = None) -> str:
    pattern = compile_query(query, regex=regex, case_sensitive=case_sensitive)
    scope = SearchScope([str(f) for f in folders], {str(p): t for p, t in (unsaved or {}).items()},
                        privacy or ContextOptions(), patterns or SublimePatterns(), seconds)
    return search_project(SearchQuery(pattern, None if regex else query, glob, max_results), scope)


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    git(folder, "init", "-q")
    (folder / ".gitignore").write_text("build/\n*.log\n")
    (folder / "src").mkdir()
    (folder / "src" / "app.py").write_text("def needle():\n    return 'needle'\n# héllo needle\n")
    (folder / "build").mkdir()
    (folder / "build" / "out.py").write_text("needle in the build\n")
    (folder / "run.log").write_text("needle logged\n")
    (folder / ".env").write_text("SECRET_needle=hunter2\n")
    (folder / "image.dat").write_bytes(b"\0\1needle\0")
    git(folder, "add", "src/app.py", ".gitignore")
    (folder / "notes.txt").write_text("untracked needle\n")  # untracked, not ignored: searched
    return folder


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "a.py").write_text("needle = 1\n")
    (folder / "a.pyc").write_text("needle compiled\n")
    (folder / "node").mkdir()
    (folder / "node" / "b.js").write_text("const needle = 2;\n")
    (folder / ".env").write_text("needle=secret\n")
    return folder


def lines_of(answer: str) -> list[str]:
    return answer.splitlines()


def test_inside_a_repository_git_decides_and_excluded_files_never_answer(repo: Path) -> None:
    (repo / "keys").mkdir()
    (repo / "keys" / "Server.PEM").write_text("needle in a tracked key\n")
    git(repo, "add", "keys/Server.PEM")
    answer = search([repo], "needle")
    assert lines_of(answer) == [  # git grep's tracked files, then the untracked ones
        "src/app.py:1:5: def needle():",
        "src/app.py:2:13:     return 'needle'",
        "src/app.py:3:9: # héllo needle",  # the column counts code points, git counts bytes
        "notes.txt:1:11: untracked needle",
    ]
    assert "hunter2" not in search([repo], "hunter2") and search([repo], "hunter2") == "No matches."


@pytest.fixture
def tracked_key(repo: Path) -> Path:
    (repo / "keys").mkdir()
    (repo / "keys" / "Server.PEM").write_text("needle in a tracked key\n")
    git(repo, "add", "keys/Server.PEM")
    return repo


def git_in_front(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> str:
    """A git on the PATH that runs `script` (a shell line; $GIT is the real one); the real git's path."""
    real_git = shutil.which("git")
    assert real_git is not None
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nGIT="{real_git}"\n{script}\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    return real_git


@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell script stands in for git")
@pytest.mark.parametrize("privacy", [
    ContextOptions(),  # the defaults: git is told the patterns
    ContextOptions(excluded_patterns=(".env", "*.pe?")),  # a `?`: the tracked files are listed and named to git
])
def test_git_grep_itself_never_reaches_an_excluded_tracked_file(tracked_key: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 privacy: ContextOptions) -> None:
    calls = tmp_path / "calls"
    real_git = git_in_front(tmp_path, monkeypatch,
                            f'printf "%s\\0" "$@" >> "{calls}"\nprintf "\\n" >> "{calls}"\nexec "$GIT" "$@"')
    assert "needle in a tracked key" not in search([tracked_key], "needle", privacy=privacy)
    greps = [call.rstrip("\0").split("\0") for call in calls.read_text().splitlines() if "\0grep\0" in call]
    assert greps
    for argv in greps:  # what git reads with the very arguments it was given
        read = subprocess.run([real_git, *argv], check=False, capture_output=True, text=True).stdout
        assert "needle" in read and "Server.PEM" not in read


@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell script stands in for git")
def test_the_users_environment_cannot_make_git_read_an_excluded_file(tracked_key: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """GIT_LITERAL_PATHSPECS (inherited from the user's shell) would make git
    take `:(exclude,literal)keys/Server.PEM` for a file name, and read the key."""
    received = tmp_path / "received"
    git_in_front(tmp_path, monkeypatch, f'"$GIT" "$@" | tee -a "{received}"')
    monkeypatch.setenv("GIT_LITERAL_PATHSPECS", "1")
    assert "src/app.py:1:5: def needle():" in lines_of(search([tracked_key], "needle"))
    assert "needle in a tracked key" not in received.read_text()


def test_a_word_query_finds_what_git_grep_finds(repo: Path) -> None:
    ours = {line.split(": ", 1)[0].rsplit(":", 1)[0] for line in lines_of(search([repo], "needle"))}
    grep = git(repo, "grep", "-n", "-I", "--untracked", "needle").splitlines()
    theirs = {":".join(line.split(":", 2)[:2]) for line in grep if not line.startswith(".env")}
    assert ours == theirs


def test_a_regex_reads_the_same_files_in_a_repository(repo: Path) -> None:
    answer = search([repo], r"ne+dle\(\)", regex=True)
    assert lines_of(answer) == ["src/app.py:1:5: def needle():"]
    assert "build" not in search([repo], "needle", regex=True) and "SECRET" not in search([repo], "needle", regex=True)


def test_outside_a_repository_sublimes_filters_hold(plain: Path) -> None:
    patterns = SublimePatterns(folder_exclude=("node",), file_exclude=("*.pyc",))
    assert lines_of(search([plain], "needle", patterns=patterns)) == ["a.py:1:1: needle = 1"]
    assert "node/b.js:1:7: const needle = 2;" in search([plain], "needle")
    assert "secret" not in search([plain], "needle")


def test_unsaved_text_answers_for_its_file_first(repo: Path) -> None:
    app = repo / "src" / "app.py"
    answer = search([repo], "needle", unsaved={app: "only_unsaved needle\n", repo / ".env": "needle\n"})
    assert lines_of(answer)[0] == "src/app.py:1:14: only_unsaved needle"
    assert "def needle" not in answer and ".env" not in answer


def test_several_folders_name_theirs(repo: Path, plain: Path) -> None:
    answer = search([repo, plain], "needle = 1")
    assert lines_of(answer) == ["plain/a.py:1:1: needle = 1"]


def test_binary_special_and_escaping_files_are_not_read(plain: Path, tmp_path: Path) -> None:
    (plain / "blob.bin").write_bytes(b"needle\0\0")
    os.mkfifo(plain / "pipe")  # opening it would wait for a writer
    outside = tmp_path / "outside.txt"
    outside.write_text("needle outside\n")
    os.symlink(outside, plain / "link.txt")
    os.symlink(tmp_path, plain / "up")
    (plain / "inner.txt").write_text("needle inner\n")
    os.symlink(plain / "inner.txt", plain / "link_in.txt")
    answer = search([plain], "needle")
    assert "blob.bin" not in answer and "outside" not in answer and "up/" not in answer
    assert "link_in.txt:1:1: needle inner" in answer


def test_glob_and_case(plain: Path) -> None:
    assert lines_of(search([plain], "NEEDLE", case_sensitive=False, glob="*.js")) == ["node/b.js:1:7: const needle = 2;"]
    assert search([plain], "NEEDLE") == "No matches."
    assert lines_of(search([plain], "needle", glob="node/*.js")) == ["node/b.js:1:7: const needle = 2;"]


# --- bounds ---------------------------------------------------------------------------------------


def test_the_answer_is_cut_at_max_results_and_says_so(plain: Path, repo: Path) -> None:
    (plain / "many.txt").write_text("hit\n" * 500)
    answer = lines_of(search([plain], "hit"))
    assert len(answer) == 201 and answer[-1].startswith("[cut at 200 matches")
    assert lines_of(search([plain], "hit", max_results=3))[3].startswith("[cut at 3 matches")
    (repo / "many.txt").write_text("hit\n" * 500)
    assert len(lines_of(search([repo], "hit"))) == 201  # git grep's answer too


@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell script stands in for git")
def test_git_grep_is_ended_once_the_answer_is_full(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A common word in a big repository: git is not left to grep the rest
    (here a git that would still write "finished" after its answer)."""
    (repo / "many.txt").write_text("hit\n" * 500)
    git(repo, "add", "many.txt")
    finished = tmp_path / "finished"
    git_in_front(tmp_path, monkeypatch,
                 f'case " $* " in *" grep "*) "$GIT" "$@"; sleep 5; echo yes > "{finished}";; *) exec "$GIT" "$@";; esac')
    answer = lines_of(search([repo], "hit", max_results=3))
    assert answer[:3] == ["many.txt:1:1: hit", "many.txt:2:1: hit", "many.txt:3:1: hit"]
    assert answer[3].startswith("[cut at 3 matches")
    time.sleep(0.2)
    assert not finished.exists()


def test_git_greps_records_are_the_same_however_its_output_is_cut() -> None:
    from qwencompanion_src.core.ide_tools.project_search import _Answer, _GrepRecords, _Wanted

    output = "".join(f"dir/f{n}.py\0{n}\0{n % 7 + 1}\0{'é' * (n % 3)}needle {n}\n" for n in range(1, 40)).encode()
    answers = []
    for size in (1, 2, 5, 64, len(output)):
        answer = _Answer(1000)
        records = _GrepRecords("/work", "", _Wanted(None, ContextOptions()), set(), answer)
        for start in range(0, len(output), size):
            assert records.take(output[start : start + size])
        answers.append(answer.text())
    assert len(set(answers)) == 1 and answers[0].count("\n") == 38
    assert "dir/f2.py:2:2: ééneedle 2" in answers[0]  # byte 3 of the line starts its second code point


def test_a_long_line_is_cut_around_its_match(plain: Path) -> None:
    (plain / "long.txt").write_text("x" * 5000 + "needle" + "y" * 5000 + "\n")
    [line] = lines_of(search([plain], "needle", glob="long.txt"))
    text = line.split(": ", 1)[1]
    assert line.startswith("long.txt:1:5001: ") and "needle" in text and len(text) <= 202


def test_the_whole_answer_stays_under_64_kb(plain: Path) -> None:
    (plain / "wide.txt").write_text(("needle" + "z" * 300 + "\n") * 1000)
    answer = search([plain], "needle", max_results=1000)
    assert len(answer.encode()) <= MAX_ANSWER_BYTES + 200
    assert answer.endswith("narrow the query or the glob]") and "64 KB" in answer


def test_a_search_past_its_time_is_partial(plain: Path) -> None:
    for index in range(50):
        (plain / f"f{index}.txt").write_text("needle\n")
    answer = search([plain], "needle", regex=True, seconds=0.0)
    assert answer.splitlines()[-1].startswith("[partial: the search took more than 0 s")


@pytest.mark.parametrize(("pattern", "why"), [
    ("(a+)+$", "nests a quantifier"),
    ("(x|xx)*y", "repeats an alternation"),
    (r"(\w)\1", "backreference"),
    (".*a.*b.*c.*d", "4 unbounded quantifiers"),
    ("((a)", "not valid"),
    ("a" * 1001, "longer than 1000"),
])
def test_a_regex_that_could_run_unbounded_is_refused(pattern: str, why: str) -> None:
    with pytest.raises(ToolRefusal, match=why):
        compile_query(pattern, regex=True, case_sensitive=True)


def test_ordinary_regexes_pass_and_text_is_taken_literally() -> None:
    for pattern in (r"def \w+\(", r"^\s*import (os|sys)$", r"[A-Z]\w*Error", ".*TODO.*"):
        compile_query(pattern, regex=True, case_sensitive=True)
    assert compile_query("(a+)+", regex=False, case_sensitive=True).search("x(a+)+y") is not None


RELATIVES = [".env", "a/.env", "a/.env.local", "keys/x.pem", "K/Y.Pem", "id_rsa.pub", "x/id_rsa", "secrets/a.txt",
             "deep/private/b.txt", "main.py", "env", "my.env", "a/b.KEY", "Ünï/ÄB.PEM"]


@pytest.mark.parametrize(("patterns", "folder"), [
    ((".env", "*.PEM", "id_rsa*", "secrets/*", "*/private/*", "*.k?y"), "/Work/Repo"),  # paths: every file asked
    ((".env", "*.PEM", "id_rsa*", "*.k?y"), "/Work/Repo"),  # names: only files holding a pattern's run
    (("*.pem", "*repo*"), "/Work/Repo"),  # a run in the folder's part: every file asked
    (("*.pdf", "ä*"), "/Work/Repo"),  # a run not ASCII: every file asked
    (("*.pdf",), "/Work/Repo"),  # a run in no file: none asked
])
def test_the_bulk_privacy_check_is_the_context_rules_own(patterns: tuple[str, ...], folder: str) -> None:
    from qwencompanion_src.core.ide_tools.project_search import _Wanted

    privacy = ContextOptions(excluded_patterns=patterns)
    listing = "".join(f"{relative}\0" for relative in RELATIVES)
    expected = [rel for rel in RELATIVES if privacy.excludes(f"{folder}/{rel}")]
    assert _Wanted(None, privacy).private_among(folder, listing) == expected
    if patterns[0] == ".env":
        assert expected[:4] == [".env", "a/.env", "keys/x.pem", "K/Y.Pem"]


def test_an_ignored_files_unsaved_text_is_not_searched(repo: Path) -> None:
    answer = search([repo], "typed", unsaved={repo / "build" / "out.py": "typed here\n",
                                              repo / "src" / "app.py": "typed there\n"})
    assert lines_of(answer) == ["src/app.py:1:1: typed there"]
