"""Where qwen keeps settings.json and ide/: computed exactly as the CLI does.

The CLI (Node) takes `QWEN_HOME` when it is set and not empty: `~`, `~/…`
and `~\\…` start at the home directory, a relative path is resolved against
the working directory, and the result is normalised. Without it, it is
`<home>/.qwen`. When `QWEN_HOME` is not in the environment at all, the CLI
first looks for it in `<home>/.qwen/.env`, then `<home>/.env`.

Node's home directory is `os.homedir()`: `USERPROFILE` on Windows (never
`HOME`, which MSYS2, Cygwin and Emacs set), `HOME` elsewhere, else the
account's profile; an empty one means the temporary directory. Every function
takes the platform as a parameter, so the Windows rules are tested anywhere.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import re
from collections.abc import Callable, Mapping
from types import ModuleType

SIGN_IN_HINT = ("Run `qwen` in a terminal once and sign in (/auth), or set OPENAI_API_KEY, OPENAI_BASE_URL "
                "and OPENAI_MODEL in its environment")
"""What a user whose qwen was never signed in does (the chat and the quick
actions say it): the sign-in is kept in qwen's home."""

QWEN_HOME_ENV = "QWEN_HOME"
QWEN_DIR = ".qwen"
ON_WINDOWS = os.name == "nt"

ReadText = Callable[[str], str]
"""Reads a file's text; raises OSError when it cannot."""


def _flavour(windows: bool) -> ModuleType:
    return ntpath if windows else posixpath


def env_value(environ: Mapping[str, str], name: str, windows: bool) -> str | None:
    """A variable's value; Windows names ignore case, as Node's process.env does there."""
    if not windows:
        return environ.get(name)
    wanted = name.upper()
    return next((value for key, value in environ.items() if key.upper() == wanted), None)


def node_tmpdir(environ: Mapping[str, str], windows: bool) -> str:
    """Node's `os.tmpdir()` (one trailing separator dropped, a drive root kept)."""
    if windows:
        path = (env_value(environ, "TEMP", windows) or env_value(environ, "TMP", windows)
                or (env_value(environ, "SystemRoot", windows) or env_value(environ, "windir", windows) or "") + "\\temp")
        return path[:-1] if len(path) > 1 and path.endswith("\\") and not path.endswith(":\\") else path
    path = environ.get("TMPDIR") or environ.get("TMP") or environ.get("TEMP") or "/tmp"
    return path[:-1] if len(path) > 1 and path.endswith("/") else path


def _account_home() -> str:
    """The account's home directory, not from the variable Node reads first
    (only reached when that variable is unset)."""
    return os.path.expanduser("~")


def node_homedir(
    environ: Mapping[str, str], windows: bool, account_home: Callable[[], str] = _account_home
) -> str:
    """Node's `os.homedir()` (libuv: the variable when set, even empty, else
    the account's profile directory)."""
    value = env_value(environ, "USERPROFILE" if windows else "HOME", windows)
    return account_home() if value is None else value


def _home_or_tmp(environ: Mapping[str, str], windows: bool, account_home: Callable[[], str]) -> str:
    return node_homedir(environ, windows, account_home) or node_tmpdir(environ, windows)


# The CLI turns `QWEN_HOME: value` (a YAML habit) into `QWEN_HOME=value` first.
_YAML_STYLE = re.compile(r"^(\s*(?:export\s+)?QWEN_HOME):[^\S\r\n]+", re.MULTILINE)


def dotenv_value(text: str, name: str) -> str | None:
    """`name` from a .env file as Node's `util.parseEnv` reads it (the last
    assignment wins; quotes kept apart, `#` starts a comment outside them)."""
    found: str | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("export "):
            stripped = stripped[len("export "):].lstrip()
        key, sep, value = stripped.partition("=")
        if not sep or key.strip() != name:
            continue
        value = value.strip()
        quote = value[:1]
        closing = value.find(quote, 1) if quote in ("'", '"', "`") else -1
        if closing > 0:
            inner = value[1:closing]
            found = inner.replace("\\n", "\n") if quote == '"' else inner
        else:
            found = value.split("#", 1)[0].strip()
    return found


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def configured_qwen_home(
    environ: Mapping[str, str],
    *,
    windows: bool = ON_WINDOWS,
    account_home: Callable[[], str] = _account_home,
    read_text: ReadText = _read_text,
) -> str | None:
    """QWEN_HOME as the CLI ends up with it: the environment's (even empty),
    else the first one set in `<home>/.qwen/.env` or `<home>/.env`."""
    value = env_value(environ, QWEN_HOME_ENV, windows)
    if value is not None:
        return value
    flavour = _flavour(windows)
    home = _home_or_tmp(environ, windows, account_home)
    for candidate in (flavour.join(home, QWEN_DIR, ".env"), flavour.join(home, ".env")):
        try:
            text = read_text(candidate).removeprefix("\ufeff")
        except (OSError, ValueError):  # missing, unreadable or not UTF-8: the CLI moves on quietly
            continue
        configured = dotenv_value(_YAML_STYLE.sub(r"\1=", text), QWEN_HOME_ENV)
        if configured:
            return configured
    return None


def resolve_qwen_home(
    configured: str | None,
    environ: Mapping[str, str],
    *,
    windows: bool = ON_WINDOWS,
    cwd: str | None = None,
    account_home: Callable[[], str] = _account_home,
) -> str:
    """The CLI's `Storage.getGlobalQwenDir()` for a given QWEN_HOME value."""
    flavour = _flavour(windows)
    home = _home_or_tmp(environ, windows, account_home)
    if not configured:
        return str(flavour.join(home, QWEN_DIR))
    resolved = configured
    if resolved == "~" or resolved.startswith(("~/", "~\\")):
        segments = [part for part in re.split(r"[/\\]+", resolved[2:]) if part]
        resolved = flavour.join(home, *segments)
    if not flavour.isabs(resolved):
        resolved = flavour.join(os.getcwd() if cwd is None else cwd, resolved)
    return str(flavour.normpath(resolved))


def is_relative(configured: str | None, *, windows: bool = ON_WINDOWS) -> bool:
    """Is QWEN_HOME a relative path? The CLI then resolves it against the
    folder it runs in, so each folder gets a home of its own."""
    if not configured or configured == "~" or configured.startswith(("~/", "~\\")):
        return False
    return not _flavour(windows).isabs(configured)


def qwen_home(
    environ: Mapping[str, str] | None = None,
    *,
    windows: bool = ON_WINDOWS,
    cwd: str | None = None,
    account_home: Callable[[], str] = _account_home,
    read_text: ReadText = _read_text,
) -> str:
    """qwen's home directory (reads up to two small .env files: not on the UI thread)."""
    env = os.environ if environ is None else environ
    configured = configured_qwen_home(env, windows=windows, account_home=account_home, read_text=read_text)
    return resolve_qwen_home(configured, env, windows=windows, cwd=cwd, account_home=account_home)
