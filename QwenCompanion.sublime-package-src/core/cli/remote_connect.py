"""What starts a CLI that runs elsewhere, wired to a window's remote endpoint
(`core.companion.remote`): the connect commands for a container and over
SSH, and the WSL terminal.

qwen 0.24.4 takes its token from a lock file only (`<qwen's home>/ide/<port>.lock`,
no variable holds it), so the remote lock file must reach the CLI's home, and
so must the `--mcp-config` of the IDE tools, which holds their token too.
Neither token is ever on a command line nor on the clipboard: every command
here names the local 0600 connect file (`Companion.remote_connect_file`: the
lock file's JSON, then the tools config's, a line each), whose content travels
on stdin (`docker exec -i … < file`, `ssh … < file`) or, from Windows into WSL,
is read by path (`WSLENV`'s `/p` translates it). The port and workspace go as
variables.

The tools config names the editor by the address the CLI reaches it at, which
only the remote side knows: in a container (`/.dockerenv`,
`/run/.containerenv`, as qwen tests) `host.docker.internal` unless the
container cannot resolve it (`--network=host`), else 127.0.0.1.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from .terminal import PORT_ENV, WORKSPACE_ENV, command_line

LOCK_ENV = "QWEN_COMPANION_LOCK_FILE"
"""The WSL terminal's variable naming the connect file to install (a path, not the token)."""

HOST_PLACEHOLDER = "@QWEN_COMPANION_HOST@"
"""Where the tools config names the editor; the install line puts the address there."""

TOOLS_CONFIG = "{port}-ide-tools.json"
"""The tools config's name in the CLI's `ide` folder, next to its lock file."""

_CLI_IDE_FOLDER = '"${QWEN_HOME:-$HOME/.qwen}/ide"'


def install_lock_script(port: int, source: str = "") -> str:
    """POSIX shell that installs the lock file and the IDE tools' config where
    the CLI there looks for them (`$QWEN_HOME/ide`, else `~/.qwen/ide`),
    owner-only: the connect file read from `source`, else from stdin."""
    tools = TOOLS_CONFIG.format(port=port)
    read = "{ IFS= read -r lock; IFS= read -r tools || true; }" + (f" < {source}" if source else "")
    host = ('h=127.0.0.1; if [ -f /.dockerenv ] || [ -f /run/.containerenv ]; then h=host.docker.internal; '
            'if command -v getent >/dev/null 2>&1 && ! getent hosts host.docker.internal >/dev/null 2>&1; '
            'then h=127.0.0.1; fi; fi')
    return (f'umask 077; d={_CLI_IDE_FOLDER}; mkdir -p "$d" && {read} && [ -n "$lock" ] && '
            f'printf \'%s\\n\' "$lock" > "$d/.{port}.lock.tmp" && mv -f "$d/.{port}.lock.tmp" "$d/{port}.lock" && '
            f'if [ -n "$tools" ]; then {host}; '
            f'printf \'%s\\n\' "$tools" | sed "s/{HOST_PLACEHOLDER}/$h/" > "$d/.{tools}.tmp" && '
            f'mv -f "$d/.{tools}.tmp" "$d/{tools}"; else rm -f "$d/{tools}"; fi')


def start_script(*, port: int, folders: Sequence[str], command: str | list[str]) -> str:
    """POSIX shell that starts the CLI in the first folder with the variables
    set, and with the IDE tools when their config was installed."""
    workspace = ":".join(folders)
    tools = f'{_CLI_IDE_FOLDER}/{TOOLS_CONFIG.format(port=port)}'
    return (f'{{ t={tools}; if [ -f "$t" ]; then set -- --mcp-config "$t"; else set --; fi; '
            f"cd {shlex.quote(folders[0])} && {PORT_ENV}={port} {WORKSPACE_ENV}={shlex.quote(workspace)} "
            f'exec {command_line(command)} "$@"; }}')


def container_connect(
    *, container: str, port: int, folders: Sequence[str], command: str | list[str], lock_file: str,
) -> str:
    """Lines for a host terminal: install the lock file in `container`, then run
    the CLI there (`docker exec`; podman takes the same words). The CLI reaches
    the editor at 127.0.0.1 with `--network=host`, else at `host.docker.internal`."""
    install = install_lock_script(port)
    start = start_script(port=port, folders=folders, command=command)
    name = shlex.quote(container)
    return "\n".join([
        f"docker exec -i {name} sh -c {shlex.quote(install)} < {shlex.quote(lock_file)}",
        f"docker exec -it {name} sh -c {shlex.quote(start)}",
        "",
    ])


def ssh_forward(port: int) -> str:
    """`-R`: the remote machine's 127.0.0.1:<port> leads to the editor's (same
    port on both ends: the Host header the server checks names it)."""
    return f"127.0.0.1:{port}:127.0.0.1:{port}"


def ssh_connect(
    *, destination: str, port: int, folders: Sequence[str], command: str | list[str], lock_file: str,
) -> str:
    """Lines for a local terminal: install the lock file on `destination`, then
    log in with the reverse forward and run the CLI there."""
    install = install_lock_script(port)
    start = start_script(port=port, folders=folders, command=command)
    host = shlex.quote(destination)
    return "\n".join([
        f"ssh {host} {shlex.quote(install)} < {shlex.quote(lock_file)}",
        f"ssh -t -R {ssh_forward(port)} {host} {shlex.quote(start)}",
        "",
    ])


def wsl_terminal(
    *, distro: str, port: int, folders: Sequence[str], command: str | list[str], lock_file: str,
    inherited_wslenv: str = "",
) -> tuple[list[str], dict[str, str]]:
    """Terminus's `cmd` and `env` for a CLI inside WSL `distro`: `WSLENV` (after
    the user's own `inherited_wslenv`) hands the port, the workspace (as WSL
    names it) and the lock file's path (translated by `/p`) to the
    distribution, whose login shell installs the lock file and starts the CLI
    in the first folder."""
    install = install_lock_script(port, source='"$' + LOCK_ENV + '"')
    script = f"{install} && {start_script(port=port, folders=folders, command=command)}"
    ours = f"{PORT_ENV}/u:{WORKSPACE_ENV}/u:{LOCK_ENV}/pu"
    env = {
        PORT_ENV: str(port),
        WORKSPACE_ENV: ":".join(folders),
        LOCK_ENV: lock_file,
        "WSLENV": f"{inherited_wslenv.rstrip(':')}:{ours}" if inherited_wslenv.strip(":") else ours,
    }
    return ["wsl.exe", "-d", distro, "--", "sh", "-lc", script], env
