"""A file read from disk is decoded as Sublime Text would open it."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from qwencompanion_src.core.files.encodings import SUBLIME_CODECS, codec_for, decode_like_sublime
from qwencompanion_src.core.reviews import read_disk_file


@pytest.mark.parametrize(
    ("data", "text", "encoding"),
    [
        ("naïve\n".encode(), "naïve\n", "UTF-8"),
        (codecs.BOM_UTF8 + "naïve\n".encode(), "naïve\n", "UTF-8 with BOM"),
        (codecs.BOM_UTF16_LE + "naïve\n".encode("utf-16-le"), "naïve\n", "UTF-16 LE with BOM"),
        (codecs.BOM_UTF16_BE + "naïve\n".encode("utf-16-be"), "naïve\n", "UTF-16 BE with BOM"),
        ("café €\n".encode("cp1252"), "café €\n", "Western (Windows 1252)"),
        # Bytes Windows 1252 leaves undefined keep their value: nothing turns into U+FFFD.
        (b"\x81\x8d\x8f\x90\x9d", "\x81\x8d\x8f\x90\x9d", "Western (Windows 1252)"),
        # GBK is no encoding Sublime knows: it opens in the fallback, byte for byte.
        ("中文\n".encode("gbk"), "ÖÐÎÄ\n", "Western (Windows 1252)"),
    ],
)
def test_detection_and_the_default_fallback(data: bytes, text: str, encoding: str) -> None:
    assert decode_like_sublime(data) == (text, encoding)
    assert "\ufffd" not in decode_like_sublime(data)[0]


def test_the_fallback_encoding_setting_is_used() -> None:
    assert decode_like_sublime("привет".encode("cp1251"), "Cyrillic (Windows 1251)") == ("привет", "Cyrillic (Windows 1251)")
    assert decode_like_sublime("ελληνικά".encode("iso8859-7"), "Greek (ISO 8859-7)")[0] == "ελληνικά"
    # A codec name a plugin set there (Sublime has no GBK of its own) works too.
    assert decode_like_sublime("中文".encode("gbk"), "GBK") == ("中文", "GBK")
    # An unknown name: Sublime's default.
    assert decode_like_sublime("café".encode("cp1252"), "Klingon") == ("café", "Western (Windows 1252)")


def test_every_sublime_name_has_a_codec() -> None:
    for name, codec in SUBLIME_CODECS.items():
        assert codec_for(name) == codec
        codecs.lookup(codec)


def test_read_disk_file_decodes_like_sublime(tmp_path: Path) -> None:
    western = tmp_path / "western.txt"
    western.write_bytes("café\r\n".encode("cp1252"))
    disk = read_disk_file(str(western))
    assert (disk.text, disk.line_ending) == ("café\n", "\r\n")
    gbk = tmp_path / "gbk.txt"
    gbk.write_bytes("中文\n".encode("gbk"))
    assert read_disk_file(str(gbk)).text == "ÖÐÎÄ\n"
    assert read_disk_file(str(gbk), "GBK").text == "中文\n"
