"""Decode a file's bytes the way Sublime Text opens it.

Sublime detects a UTF-8 or UTF-16 byte-order mark and valid UTF-8; anything
else opens in the `fallback_encoding` setting ("Western (Windows 1252)" by
default). A review's left side read from disk must show what the user would
see opening the file, not U+FFFD for every byte that is not UTF-8.
"""

from __future__ import annotations

import codecs

DEFAULT_FALLBACK = "Western (Windows 1252)"

# Sublime's encoding names (what `view.encoding()` answers and
# `fallback_encoding` takes) and the Python codec for each.
SUBLIME_CODECS = {
    "UTF-8": "utf-8",
    "UTF-8 with BOM": "utf-8-sig",
    "UTF-16 LE": "utf-16-le",
    "UTF-16 BE": "utf-16-be",
    "UTF-16 LE with BOM": "utf-16-le",
    "UTF-16 BE with BOM": "utf-16-be",
    "Western (Windows 1252)": "cp1252",
    "Western (ISO 8859-1)": "iso8859-1",
    "Western (ISO 8859-3)": "iso8859-3",
    "Western (ISO 8859-15)": "iso8859-15",
    "Western (Mac Roman)": "mac-roman",
    "DOS (CP 437)": "cp437",
    "Arabic (Windows 1256)": "cp1256",
    "Arabic (ISO 8859-6)": "iso8859-6",
    "Baltic (Windows 1257)": "cp1257",
    "Baltic (ISO 8859-4)": "iso8859-4",
    "Celtic (ISO 8859-14)": "iso8859-14",
    "Central European (Windows 1250)": "cp1250",
    "Central European (ISO 8859-2)": "iso8859-2",
    "Central European (Mac)": "mac-latin2",
    "Cyrillic (Windows 1251)": "cp1251",
    "Cyrillic (Windows 866)": "cp866",
    "Cyrillic (ISO 8859-5)": "iso8859-5",
    "Cyrillic (KOI8-R)": "koi8-r",
    "Cyrillic (KOI8-U)": "koi8-u",
    "Estonian (ISO 8859-13)": "iso8859-13",
    "Greek (Windows 1253)": "cp1253",
    "Greek (ISO 8859-7)": "iso8859-7",
    "Hebrew (Windows 1255)": "cp1255",
    "Hebrew (ISO 8859-8)": "iso8859-8",
    "Nordic (ISO 8859-10)": "iso8859-10",
    "Romanian (ISO 8859-16)": "iso8859-16",
    "Turkish (Windows 1254)": "cp1254",
    "Turkish (ISO 8859-9)": "iso8859-9",
    "Vietnamese (Windows 1258)": "cp1258",
}


def codec_for(name: str) -> str | None:
    """The Python codec of a Sublime encoding name, or of a codec name that a
    plugin (e.g. one that adds GBK) put there; None when unknown."""
    known = SUBLIME_CODECS.get(name)
    if known is not None:
        return known
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _decode_keeping_bytes(data: bytes, codec: str) -> str:
    """Decode; a byte the encoding cannot read (0x81 in Windows 1252) keeps
    its value as a character, as Windows code pages do, instead of turning
    into U+FFFD."""
    text = data.decode(codec, errors="surrogateescape")
    if not any("\udc80" <= char <= "\udcff" for char in text):
        return text
    return "".join(chr(ord(char) - 0xDC00) if "\udc80" <= char <= "\udcff" else char for char in text)


def decode_like_sublime(data: bytes, fallback_encoding: str = DEFAULT_FALLBACK) -> tuple[str, str]:
    """(text, Sublime's name of the encoding it was read with)."""
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8):].decode("utf-8", errors="replace"), "UTF-8 with BOM"
    if data.startswith(codecs.BOM_UTF16_LE):
        return data[2:].decode("utf-16-le", errors="replace"), "UTF-16 LE with BOM"
    if data.startswith(codecs.BOM_UTF16_BE):
        return data[2:].decode("utf-16-be", errors="replace"), "UTF-16 BE with BOM"
    try:
        return data.decode("utf-8"), "UTF-8"
    except UnicodeDecodeError:
        pass
    name = fallback_encoding if codec_for(fallback_encoding) else DEFAULT_FALLBACK
    return _decode_keeping_bytes(data, codec_for(name) or "cp1252"), name


_BOMS = {
    "UTF-8 with BOM": codecs.BOM_UTF8,
    "UTF-16 LE with BOM": codecs.BOM_UTF16_LE,
    "UTF-16 BE with BOM": codecs.BOM_UTF16_BE,
}


def _keep_bytes(error: UnicodeError) -> tuple[bytes, int]:
    """The encoding side of `_decode_keeping_bytes`: a character U+0080…U+00FF
    that the code page leaves undefined goes back to the byte it came from."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    chars = error.object[error.start:error.end]
    if any(not "\x80" <= char <= "\xff" for char in chars):
        raise error
    return bytes(ord(char) for char in chars), error.end


codecs.register_error("qwencompanion.keep_bytes", _keep_bytes)


def encode_like_sublime(text: str, encoding: str) -> bytes:
    """`text` stored in the encoding `decode_like_sublime` named (its BOM
    included): what was read and is written back unchanged is the same bytes.
    `UnicodeEncodeError` when a character has no place in that encoding."""
    bom = _BOMS.get(encoding, b"")
    codec = codec_for(encoding) or "utf-8"
    if bom:
        codec = {"utf-8-sig": "utf-8"}.get(codec, codec)
        text = text.removeprefix("\ufeff")  # the CLI adds U+FEFF itself to a file it saw a BOM in
    errors = "strict" if codec.startswith("utf") else "qwencompanion.keep_bytes"
    return bom + text.encode(codec, errors=errors)
