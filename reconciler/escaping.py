"""Make untrusted text safe to print: the one escaping function of the tool.

Names reach the output from disk and from the Platform: config file names (addresses),
directory names, run names, manifest paths, error texts. Printed raw, a newline forges
extra lines in a plan or a PR comment, and an ANSI/OSC escape sequence rewrites the
terminal (colours, the window title, hyperlinks, cursor moves that hide lines). Every such
name goes through ``escape_text`` where it is put into text for people: the text and
markdown plans, apply's output lines, error messages and config issues. JSON output needs
nothing more (``json.dumps`` escapes control characters itself).

What is escaped, Python-style so the name stays recognisable: C0 controls and DEL (``\\n``,
``\\t``, ``\\x1b``, ...), C1 controls (``\\x9b`` is a one-byte CSI), Unicode line and
paragraph separators, bidirectional overrides and isolates (they reorder what is shown,
"Trojan Source"), and the surrogates that stand for undecodable bytes of a file name
(``\\udcff`` is shown as the byte ``\\xff``). In a name, a backslash is escaped too, so that
an escape in the output always means one in the input. Ordinary text, accents and emoji are kept.

Pure: part of the core (no imports beyond the standard library).
"""

from __future__ import annotations

import re

__all__ = ["escape_text", "shown_value", "unescape_text"]

_UNSAFE = re.compile(
    "[\\\\\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_UNSAFE_KEEPING_NEWLINES = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for an undecodable byte
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def escape_text(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every character that could forge output replaced by a visible escape.

    ``keep_newlines`` is for a whole multi-line message that we composed (a last line of
    defence for the Platform's texts inside it): ``\\n`` and backslashes stay as they are,
    the other controls are escaped. A name put into such a message is escaped on its own.
    """
    pattern = _UNSAFE_KEEPING_NEWLINES if keep_newlines else _UNSAFE
    if text.isascii() and text.isprintable() and "\\" not in text:
        return text  # the common case: nothing to look for
    return pattern.sub(_escape, text)


_ESCAPED = re.compile(r"\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|([\\nrt]))|\\")
_UNNAMED = {"\\": "\\", "n": "\n", "r": "\r", "t": "\t"}


def unescape_text(text: str) -> str | None:
    """The name ``escape_text`` printed as ``text`` (``tb/\\x1b[2Jsmoke`` -> the address
    with ESC in it), or None when ``text`` holds a backslash that no escape explains.

    So a name shown escaped can be typed back as shown: an address never holds a
    backslash (it is refused wherever one is read), so the escaped form is unambiguous."""

    def one(match: re.Match[str]) -> str:
        hex2, hex4, named = match.groups()
        if hex2 is not None:
            return chr(int(hex2, 16))
        if hex4 is not None:
            return chr(int(hex4, 16))
        if named is not None:
            return _UNNAMED[named]
        raise ValueError(match.group())

    try:
        return _ESCAPED.sub(one, text)
    except ValueError:
        return None


SHOWN_VALUE_LIMIT = 80
"""The most characters of a value an error message quotes (``shown_value``)."""


def shown_value(value: object, limit: int = SHOWN_VALUE_LIMIT) -> str:
    """A config value as an error message quotes it: its ``repr``, escaped and cut to
    ``limit`` characters. Hostile values stay a short line: an integer too long for
    Python to print (over 4,300 digits, a ``ValueError`` from ``repr``) is named by its
    size, and a long string or list is cut with an ellipsis."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        digits = int((value.bit_length() - 1) * 0.30102999566) + 1  # log10(2)
        return f"an integer of about {digits:,} digits"
    try:
        text = repr(value)
    except ValueError:  # a huge integer inside a list or table
        return f"a {type(value).__name__} holding an integer too long to show"
    text = escape_text(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
