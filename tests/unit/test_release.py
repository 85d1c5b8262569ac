"""`make release` (tools/release.py) and repository.json, the Package Control
entry that points at the asset it builds.

Facts about Package Control are from its own code (4.2.8): the repository
schema's keys (providers/repository_provider.py: package_template,
allowed_raw_release_keys), the supported schema versions
(providers/schema_version.py), the marker that makes it unpack a package
(package_manager.py, install_package) and the plugin hosts it installs
libraries for (sys_path.lib_paths: "3.14" from Sublime Text 4203 on).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "QwenCompanion.sublime-package-src"
WHEELS = ROOT / ".cache" / "wheels"
ASSET = "QwenCompanion.sublime-package"
MINIMUM_BUILD = 4205

# Package Control 4.x, repository schema 4.0.0.
SCHEMA_VERSIONS = {"2.0", "3.0.0", "4.0.0"}
REPOSITORY_KEYS = {"schema_version", "packages", "libraries", "includes"}
PACKAGE_KEYS = {"details", "name", "description", "author", "issues", "homepage", "readme", "donate", "labels",
                "releases", "previous_names", "last_modified"}
TEMPLATE_RELEASE_KEYS = {"asset", "base", "branch", "libraries", "platforms", "python_versions", "sublime_text", "tags"}
PLUGIN_HOSTS = {"3.3", "3.8", "3.13", "3.14"}


def _load_tool(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"qwen_tools_{name}", ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


release_tool = _load_tool("release")
build_tool = _load_tool("build")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_release(dist: Path) -> Path:
    """What `make release` runs, into `dist`: the build, then the asset."""
    if not (WHEELS / ".stamp").is_file():
        pytest.fail("the vendored wheels are missing: run `make install` first", pytrace=False)
    built = build_tool.build(WHEELS, dist)
    asset = dist / ASSET
    subprocess.run([sys.executable, str(ROOT / "tools" / "release.py"), str(built), str(asset)], check=True,
                   capture_output=True)
    return asset


@pytest.fixture(scope="module")
def two_releases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    first = make_release(tmp_path_factory.mktemp("first"))
    # The second build's files get other times and modes: none may reach the asset.
    second_dist = tmp_path_factory.mktemp("second")
    built = build_tool.build(WHEELS, second_dist)
    (built / "boot.py").chmod(0o755)
    (built / "_vendor" / "__pycache__").mkdir()
    (built / "_vendor" / "__pycache__" / "x.cpython-314.pyc").write_bytes(b"stale")
    (built / "core" / "tests").mkdir()
    (built / "core" / "tests" / "test_x.py").write_text("")
    asset = second_dist / ASSET
    release_tool.release(built, asset, ROOT / "CHANGELOG.md")
    return first, asset


@pytest.fixture(scope="module")
def entries(two_releases: tuple[Path, Path]) -> list[zipfile.ZipInfo]:
    with zipfile.ZipFile(two_releases[0]) as archive:
        return archive.infolist()


def version() -> str:
    found = re.search(r'^VERSION = "([^"]+)"$', (SOURCE / "core" / "version.py").read_text(), re.MULTILINE)
    assert found is not None
    return found[1]


# --- the asset ----------------------------------------------------------------------


def test_two_builds_of_one_commit_give_the_same_sha256(two_releases: tuple[Path, Path]) -> None:
    first, second = two_releases
    assert sha256(first) == sha256(second)


def test_entries_are_sorted_dated_and_moded_the_same_way(entries: list[zipfile.ZipInfo]) -> None:
    names = [e.filename for e in entries]
    assert names == sorted(names)
    assert {e.date_time for e in entries} == {(1980, 1, 1, 0, 0, 0)}
    assert {e.external_attr >> 16 for e in entries} == {0o100644}
    assert {e.create_system for e in entries} == {3}


def test_the_asset_is_the_built_package_without_bytecode_or_tests(entries: list[zipfile.ZipInfo]) -> None:
    names = {e.filename for e in entries}
    # At the root, where Package Control looks for the marker (common folder "").
    assert {".no-sublime-package", ".python-version", "boot.py", "dependencies.json", "messages.json"} <= names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc") or "/tests/" in f"/{n}"]
    # Package Control skips a root __init__.py when it extracts a package.
    assert "__init__.py" not in names
    assert any(n.startswith("_vendor/aiohttp/") for n in names)


def test_the_version_reaches_the_asset_messages_and_changelog(two_releases: tuple[Path, Path]) -> None:
    current = version()
    with zipfile.ZipFile(two_releases[0]) as archive:
        messages = json.loads(archive.read("messages.json"))
        assert f'VERSION = "{current}"' in archive.read("core/version.py").decode()
        assert archive.read(messages[current]).decode().strip()
        assert archive.read(messages["install"]).decode().strip()
    sections = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert sections[0] == current


def test_a_version_without_message_or_changelog_section_is_refused(tmp_path: Path) -> None:
    built = build_tool.build(WHEELS, tmp_path / "dist")
    version_file = built / "core" / "version.py"
    version_file.write_text(version_file.read_text().replace(f'"{version()}"', '"99.0.0"'))
    with pytest.raises(SystemExit) as refused:
        release_tool.release(built, tmp_path / ASSET, ROOT / "CHANGELOG.md")
    assert "no upgrade message for 99.0.0" in str(refused.value)
    assert "newest section is" in str(refused.value)
    assert not (tmp_path / ASSET).exists()


def test_a_version_whose_changelog_section_is_not_the_newest_is_refused(tmp_path: Path) -> None:
    """Defect guarded: a version with a CHANGELOG section anywhere (an older
    one, below the newest) was accepted as described."""
    (tmp_path / "messages").mkdir()
    (tmp_path / "messages" / "1.0.0.txt").write_text("upgraded\n")
    (tmp_path / "messages.json").write_text(json.dumps({"1.0.0": "messages/1.0.0.txt"}))
    changelog = tmp_path / "CHANGELOG.md"
    changelog.write_text("# Changelog\n\n## 1.1.0\n\n- newer\n\n## 1.0.0\n\n- older\n")
    assert release_tool.version_problems(tmp_path, changelog, "1.0.0") == [
        "CHANGELOG.md's newest section is 1.1.0, not 1.0.0"]
    changelog.write_text("# Changelog\n\n## 1.0.0\n\n- newest\n")
    assert release_tool.version_problems(tmp_path, changelog, "1.0.0") == []


def test_a_messages_json_naming_a_file_the_package_lacks_is_refused(tmp_path: Path) -> None:
    """Defect guarded: messages.json's entry for the version was trusted
    without the message file being in the package."""
    (tmp_path / "messages.json").write_text(json.dumps({"1.0.0": "messages/1.0.0.txt"}))
    changelog = tmp_path / "CHANGELOG.md"
    changelog.write_text("## 1.0.0\n")
    assert release_tool.version_problems(tmp_path, changelog, "1.0.0") == [
        "messages.json names messages/1.0.0.txt for 1.0.0, which is not in the package"]


# --- repository.json ----------------------------------------------------------------


@pytest.fixture(scope="module")
def repository() -> dict[str, object]:
    data = json.loads((ROOT / "repository.json").read_text())
    assert isinstance(data, dict)
    return data


def test_the_repository_uses_only_the_schemas_documented_keys(repository: dict[str, object]) -> None:
    assert repository["schema_version"] == "4.0.0" and repository["schema_version"] in SCHEMA_VERSIONS
    assert set(repository) <= REPOSITORY_KEYS
    packages = repository["packages"]
    assert isinstance(packages, list) and len(packages) == 1
    package = packages[0]
    assert set(package) <= PACKAGE_KEYS
    assert package["author"]  # Package Control rejects a package without one
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", package["details"])
    for release in package["releases"]:
        assert set(release) <= TEMPLATE_RELEASE_KEYS
        # An asset is looked up among the GitHub releases of tags; never with a branch.
        assert release["tags"] is True and "branch" not in release
        assert set(release["python_versions"]) <= PLUGIN_HOSTS


def test_the_repository_describes_what_make_release_builds(
    repository: dict[str, object], entries: list[zipfile.ZipInfo]
) -> None:
    package = repository["packages"][0]  # type: ignore[index]
    release = package["releases"][0]
    names = {e.filename for e in entries}
    assert package["name"] == build_tool.PACKAGE_NAME
    assert release["asset"] == ASSET == f"{package['name']}.sublime-package"
    assert release["platforms"] == ["*"]
    assert release["sublime_text"] == f">={MINIMUM_BUILD}"
    assert ".no-sublime-package" in names
    # The build range is the one the package's libraries are declared for.
    dependencies = json.loads((SOURCE / "dependencies.json").read_text())
    assert list(dependencies["*"]) == [release["sublime_text"]]
    assert release["python_versions"] == [(SOURCE / ".python-version").read_text().strip()]
