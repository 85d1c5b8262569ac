"""Paths as a CLI elsewhere sees them: in WSL, a container or over SSH.

The editor names a file by its local path (`C:\\src\\app\\main.py`,
`\\\\wsl.localhost\\Ubuntu\\home\\me\\app`, `/Users/me/app`); a CLI running
elsewhere names the same file by its path there (`/mnt/c/src/app/main.py`,
`/home/me/app`, `/workspaces/app`). A `PathTranslator` turns one into the
other, both ways, from pairs of roots (the `path_maps` setting, or the ones
WSL implies for the window's folders).

Only paths inside the window's folders cross: a path that maps to no root, or
whose mapping would leave its root (`..`, a remote name holding `\\` or a
drive), or that lands outside the window's folders is refused (None), as a
local path outside them is today. The remote side is always POSIX; the local
side is the editor's platform (Windows compares ignoring case).
"""

from __future__ import annotations

import ntpath
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..files.paths import HOST_STYLE, PathStyle

_DRIVE = re.compile(r"^([A-Za-z]):(?:[\\/]|$)")
_WSL_UNC = re.compile(r"^[\\/]{2}(?:wsl\$|wsl\.localhost)[\\/]([^\\/]+)(?:[\\/]|$)", re.IGNORECASE)
_MNT_DRIVE = re.compile(r"^/mnt/([A-Za-z])(?:/|$)")


@dataclass(frozen=True)
class PathMap:
    """A local folder and the same folder as the remote CLI sees it."""

    local: str
    remote: str


def parse_path_maps(raw: object, style: PathStyle = HOST_STYLE) -> tuple[list[PathMap], list[str]]:
    """The `path_maps` setting: a list of `{"local": …, "remote": …}` with
    absolute paths (local in the editor's style, remote POSIX). Unusable
    entries are left out, each with a sentence saying why."""
    if not isinstance(raw, list):
        return [], ["path_maps must be a list of {\"local\": …, \"remote\": …}; none used"]
    maps: list[PathMap] = []
    problems: list[str] = []
    local_absolute = ntpath.isabs if style == "windows" else posixpath.isabs
    for index, entry in enumerate(raw):
        local = entry.get("local") if isinstance(entry, dict) else None
        remote = entry.get("remote") if isinstance(entry, dict) else None
        if not (isinstance(local, str) and local_absolute(local) and isinstance(remote, str) and remote.startswith("/")):
            problems.append(f"path_maps[{index}] needs an absolute \"local\" path and a \"remote\" path starting with /; "
                            "left out")
            continue
        maps.append(PathMap(local, remote))
    return maps, problems


def _local_parts(path: str, style: PathStyle) -> list[str]:
    if style == "windows":
        drive, rest = ntpath.splitdrive(ntpath.normpath(path))
        return [drive, *(part for part in rest.split("\\") if part)]
    return [part for part in posixpath.normpath(path).split("/") if part]


def _remote_parts(path: str) -> list[str]:
    return [part for part in posixpath.normpath(path).split("/") if part]


def _fold(part: str, style: PathStyle) -> str:
    # Windows: drive letters and names ignore case, `\\WSL$` is `\\wsl$`.
    return part.replace("/", "\\").lower() if style == "windows" else part


def _below(parts: list[str], root: list[str], style: PathStyle) -> list[str] | None:
    """`parts` past `root`, or None when `parts` is not `root` or inside it."""
    if len(parts) < len(root) or [_fold(p, style) for p in parts[: len(root)]] != [_fold(p, style) for p in root]:
        return None
    return parts[len(root):]


def _join_local(root: str, below: list[str], style: PathStyle) -> str:
    if not below:
        return root
    separator = "\\" if style == "windows" else "/"
    return root.rstrip("\\/" if style == "windows" else "/") + separator + separator.join(below)


class PathTranslator:
    """Local <-> remote paths for one window: `maps` (innermost root wins),
    restricted to the window's `folders`."""

    def __init__(self, maps: Sequence[PathMap], folders: Sequence[str], style: PathStyle = HOST_STYLE) -> None:
        self.maps = list(maps)
        self.folders = list(folders)
        self.style = style

    def _inside_folders(self, local: str) -> bool:
        parts = _local_parts(local, self.style)
        return any(_below(parts, _local_parts(folder, self.style), self.style) is not None for folder in self.folders)

    def to_remote(self, local: str) -> str | None:
        """`local` as the remote CLI names it; None when it is outside the
        window's folders or no map holds it."""
        if not self._inside_folders(local):
            return None
        parts = _local_parts(local, self.style)
        best: tuple[int, PathMap, list[str]] | None = None
        for path_map in self.maps:
            root = _local_parts(path_map.local, self.style)
            below = _below(parts, root, self.style)
            if below is not None and (best is None or len(root) > best[0]):
                best = (len(root), path_map, below)
        if best is None:
            return None
        _, path_map, below = best
        return posixpath.join(posixpath.normpath(path_map.remote), *below) if below else posixpath.normpath(path_map.remote)

    def to_local(self, remote: str) -> str | None:
        """The local file the remote CLI's `remote` names; None when no map
        holds it, the mapping would leave its root, or it lands outside the
        window's folders."""
        if not remote.startswith("/"):
            return None
        parts = _remote_parts(remote)
        best: tuple[int, PathMap, list[str]] | None = None
        for path_map in self.maps:
            root = _remote_parts(path_map.remote)
            below = _below(parts, root, "posix")
            if below is not None and (best is None or len(root) > best[0]):
                best = (len(root), path_map, below)
        if best is None:
            return None
        _, path_map, below = best
        local = _join_local(path_map.local, below, self.style)
        # A remote name may hold what is a separator or a drive here (`a\..\..`,
        # `C:`): the joined path is normalised and must still be under its root.
        normal = ntpath.normpath(local) if self.style == "windows" else posixpath.normpath(local)
        if _below(_local_parts(normal, self.style), _local_parts(path_map.local, self.style), self.style) is None:
            return None
        if self.style == "windows" and any(":" in part for part in below):
            return None  # `name:stream` or a drive: never a plain file under the root
        return normal if self._inside_folders(normal) else None

    def remote_folders(self) -> list[str]:
        """The window's folders that the remote CLI can see, as it names them."""
        found = (self.to_remote(folder) for folder in self.folders)
        return [folder for folder in found if folder is not None]


# --- WSL ------------------------------------------------------------------


def wsl_path(windows_path: str, distro: str) -> str | None:
    """A Windows path as a CLI inside WSL `distro` names it: a drive path
    under `/mnt/<drive>`, a `\\\\wsl$\\<distro>\\…` or `\\\\wsl.localhost\\<distro>\\…`
    path as the distribution's own; None for another distribution or a network share."""
    unc = _WSL_UNC.match(windows_path)
    if unc is not None:
        if unc.group(1).lower() != distro.lower():
            return None
        rest = [part for part in re.split(r"[\\/]", windows_path[unc.end():]) if part]
        return posixpath.normpath("/" + "/".join(rest))
    drive = _DRIVE.match(windows_path)
    if drive is None:
        return None
    rest = [part for part in re.split(r"[\\/]", windows_path[drive.end():]) if part]
    return posixpath.normpath("/".join(["/mnt", drive.group(1).lower(), *rest]))


def wsl_maps(folders: Sequence[str], distro: str) -> list[PathMap]:
    """The maps WSL implies for the window's Windows `folders`: each folder
    and its name inside `distro` (folders it cannot see are left out)."""
    maps = []
    for folder in folders:
        remote = wsl_path(folder, distro)
        if remote is not None:
            maps.append(PathMap(folder, remote))
    return maps


def windows_path_of_wsl(remote: str, distro: str) -> str:
    """A path inside WSL as Windows names it: `/mnt/c/x` is `C:\\x`, any other
    `/x` is `\\\\wsl.localhost\\<distro>\\x` (for paths with no map, such as
    the chat agent's own files)."""
    mount = _MNT_DRIVE.match(remote)
    parts = [part for part in posixpath.normpath(remote).split("/") if part]
    if mount is not None:
        return ntpath.join(f"{mount.group(1).upper()}:\\", *parts[2:])
    return "\\\\wsl.localhost\\" + "\\".join([distro, *parts])
