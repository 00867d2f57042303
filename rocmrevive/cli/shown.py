"""The one renderer of text on its way to a terminal (docs/security.md, "Terminal output"):
``shown`` escapes what a terminal would obey. Every string the CLI prints passes it (the console
of ``cli/console.py`` applies it to each print; logs and errors in ``cli/ui.py``); JSON never does.

    shown("venv\x1b]0;pwned\x07")     # 'venv\\e]0;pwned\\x07'
"""
from __future__ import annotations

import re

# what never reaches a terminal raw: C0 and C1 controls (ESC sequences retitle, clear, move the
# cursor), DEL, the Unicode format and separator characters that reorder or hide text (bidi
# overrides, zero-width), and the lone surrogates that stand for bytes that are not UTF-8
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x1b": "\\e"}


def _escape_one(m: re.Match) -> str:
    c = m.group(0)
    n = ord(c)
    if c in _NAMED:
        return _NAMED[c]
    if 0xDC80 <= n <= 0xDCFF:        # a byte that was not UTF-8 (os.fsdecode's surrogateescape)
        return f"\\x{n - 0xDC00:02x}"
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def shown(text: str, *, lines: bool = False) -> str:
    """The one renderer of text that came from the file system (or anywhere else) on its way to
    a terminal: control characters, newlines, bidi and zero-width characters and bytes that are
    not UTF-8 shown escaped, as ``ls -b`` and git do (``\\e``, ``\\n``, ``\\x9b``); ``lines``
    keeps newlines and tabs (a block of rocmrevive's own lines). JSON never passes through it:
    it keeps the exact strings.

        shown("venv\x1b]0;pwned\x07\nfake")   # 'venv\\e]0;pwned\\x07\\nfake'
    """
    if not isinstance(text, str):
        text = str(text)
    if lines:
        return _UNSAFE.sub(lambda m: m.group(0) if m.group(0) in "\n\t" else _escape_one(m), text)
    return _UNSAFE.sub(_escape_one, text)


class Lines(str):
    """Lines of a table cell that rocmrevive stacked on purpose (``GPU0`` over its KFD node),
    each already through ``shown``: the console keeps their newlines, where a newline in any
    other cell (a folder's name) is shown escaped."""


def stacked(*parts: object) -> Lines:
    """One cell of several lines, each part through ``shown``.

        stacked("GPU0", node)      # Lines("GPU0\\n1")
    """
    return Lines("\n".join(shown(str(p)) for p in parts))
