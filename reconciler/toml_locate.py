"""Find where a key or value stands in a TOML text (slow path, only for files with issues).

The one key-path locator of the project: the config loader (``config/``) points at the line
and column of each issue with ``scan``, and the lockfile reader (``state/``) names the line
of a shape error with ``KeyLines``. Both layers import it, so it lives below both.

``tomllib`` parses fast but keeps no positions, and tomlkit keeps no line numbers either, so
this is a small scanner of our own. It is run only on files that already have an issue, and
it understands exactly the TOML shapes a benchmark config and the lockfile use: ``[table]`` and
``[[array.of.tables]]`` headers, dotted keys, quoted keys, inline tables, arrays (nested),
every string form and bare scalars. It is lenient: on text it does not understand it stops
and keeps what it found, because a position is a help, never a reason to fail.

Paths are tuples of keys (str) and array indices (int), e.g. ``("agents", 1, "model", "type")``.
"""

from __future__ import annotations

import bisect
import re

import msgspec

Path = tuple[str | int, ...]

_BARE_KEY = re.compile(r"[A-Za-z0-9_\-]+")
_SYNTAX_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
_SYNTAX_AT_END = re.compile(r"\s*\(at end of document\)$")


class _Stop(Exception):
    """The scanner met something it does not understand; keep what was found."""


class Spot(msgspec.Struct, frozen=True):
    """Offsets of a key and of its value (for headers: the header; for items: the item)."""

    key: int
    value: int


class _Node:
    """One key path of the text, as a node of a tree with one child per key or index.

    A path is its chain of parents, so a header ``[a.b.c...]`` of N levels costs N nodes
    instead of N tuples of length 1..N: memory and time stay linear in the size of the text
    (a 269 KB header of 40,000 levels took 35 s and over 6 GB with tuples).
    """

    __slots__ = ("aot_count", "children", "defined", "parent", "part", "spot")

    def __init__(self, parent: _Node | None, part: str | int) -> None:
        self.parent = parent
        self.part = part
        self.children: dict[str | int, _Node] | None = None
        self.spot: Spot | None = None
        self.aot_count = 0
        """How many ``[[...]]`` headers named this path (an array of tables)."""
        self.defined = False
        """Whether a key/value or a ``[header]`` defined this path (a second one is a duplicate)."""

    def child(self, part: str | int) -> _Node:
        if self.children is None:
            self.children = {}
        node = self.children.get(part)
        if node is None:
            node = self.children[part] = _Node(self, part)
        return node

    def path(self) -> Path:
        parts: list[str | int] = []
        node: _Node | None = self
        while node is not None and node.parent is not None:
            parts.append(node.part)
            node = node.parent
        return tuple(reversed(parts))


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text)]


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset)
    return line + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


class Positions:
    """Offsets of every key and value the scanner saw, convertible to 1-based line/column."""

    def __init__(
        self, text: str, root: _Node, duplicate: Path | None, duplicate_offset: int = 0
    ) -> None:
        self._text = text
        self._line_starts = _line_starts(text)
        self._root = root
        self.duplicate = duplicate
        """The first key defined twice, when the scanner saw one (tomllib does not say where)."""
        self.duplicate_offset = duplicate_offset

    def line_col(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self._line_starts, offset) - 1
        return index + 1, offset - self._line_starts[index] + 1

    def find(self, path: Path, anchor: str) -> tuple[int, int]:
        """Line and column for ``path``.

        ``anchor`` is ``key`` or ``value`` (the key/value itself), ``table`` (the header or
        first mention of the table at ``path``), ``parent`` (a missing key: point at the
        table that should hold it) or ``file`` (line 1, column 1).
        """
        if anchor == "file":
            return 1, 1
        if anchor == "parent":
            path = path[:-1]
            anchor = "table"
        nodes: list[_Node] = []
        node = self._root
        for part in path:
            child = node.children.get(part) if node.children else None
            if child is None:
                break
            nodes.append(child)
            node = child
        exact = len(nodes) == len(path)
        # An unknown position (for example an implicit table): the closest known parent.
        for depth in range(len(nodes) - 1, -1, -1):
            spot = nodes[depth].spot
            if spot is not None:
                at_key = anchor == "key" and exact and depth == len(path) - 1
                return self.line_col(spot.key if at_key else spot.value)
        return 1, 1

    def line_of(self, path: Path) -> int | None:
        """The line of ``path``'s key, or of the closest enclosing key or table the text
        holds (a missing key: its table's header); None when not even the first part of
        the path is in the text."""
        node = self._root
        found: list[_Node] = []
        for part in path:
            child = node.children.get(part) if node.children else None
            if child is None:
                break
            found.append(child)
            node = child
        for depth in range(len(found) - 1, -1, -1):
            spot = found[depth].spot
            if spot is not None:
                exact = depth == len(path) - 1
                return self.line_col(spot.key if exact else spot.value)[0]
        return None


class KeyLines:
    """The line of a key path in a text, scanned only when first asked: a valid file read
    with one never pays for the scan (the lockfile reader makes one per read)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._positions: Positions | None = None

    def line_of(self, path: Path | list[str | int]) -> int | None:
        if not self.text:
            return None
        if self._positions is None:
            self._positions = scan(self.text)
        return self._positions.line_of(tuple(path))


def scan(text: str, stop_line: int | None = None) -> Positions:
    """Scan ``text`` (up to ``stop_line`` when given) and return the positions found."""
    scanner = _Scanner(text, stop_line)
    try:
        scanner.run()
    except (_Stop, IndexError, RecursionError):
        pass
    duplicate = scanner.duplicate.path() if scanner.duplicate is not None else None
    return Positions(text, scanner.root, duplicate, scanner.duplicate_offset)


def current_key_path(text: str, line: int) -> Path:
    """Best-effort key path of the statement on ``line`` (for syntax errors).

    Everything before a syntax error parsed, so the scanner can follow the tables up to
    that line; the key on the line itself is read without its (broken) value.
    """
    scanner = _Scanner(text, line)
    try:
        scanner.run()
    except (_Stop, IndexError, RecursionError):
        pass
    table = scanner.table.path()
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return table
    stmt = lines[line - 1].strip()
    if stmt.startswith("["):
        inner = stmt.strip("[]").split("#")[0].strip()
        keys = _split_simple_key(inner)
        return tuple(keys) if keys else table
    keys = _split_simple_key(stmt.split("=", 1)[0]) if "=" in stmt else []
    return table + tuple(keys) if keys else table


def _split_simple_key(text: str) -> list[str]:
    parts = [p.strip().strip("\"'") for p in text.strip().split(".")]
    return parts if all(parts) else []


def syntax_error_position(text: str, message: str) -> tuple[str, int, int]:
    """Split a tomllib error message into (reason, line, column)."""
    match = _SYNTAX_POSITION.search(message)
    if match:
        return message[: match.start()], int(match.group(1)), int(match.group(2))
    match = _SYNTAX_AT_END.search(message)
    reason = message[: match.start()] if match else message
    # End of document: point after the last statement, not at trailing blank or comment
    # lines (an unclosed array or string is what the user has to find).
    lines = text.split("\n")
    last = len(lines)
    while last > 1 and (not lines[last - 1].strip() or lines[last - 1].lstrip().startswith("#")):
        last -= 1
    return reason, last, len(lines[last - 1].rstrip()) + 1


# One part of a dotted key: a multi-line, basic or literal string, or a bare key. The string
# loops are unrolled (a character class repeated, then one escape at a time) because the
# regex engine keeps a backtracking entry per repetition of a group: (?:a|b)* over a 1 MiB
# string cost 250 MB.
_KEY_PART = (
    r'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'
    r"|'''[^']*(?:'(?!'')[^']*)*'''"
    r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
    r"|'[^'\n]*'"
    r"|[A-Za-z0-9_\-]+"
)
_KEY_DOT = r"[ \t]*\.[ \t]*"


def _deep_keys(limit: int) -> re.Pattern[str]:
    # Comments and strings are matched whole so the dots inside them never count; a chain
    # of more than ``limit`` parts is found with a bounded repetition (constant memory).
    return re.compile(
        rf"#[^\n]*|(?P<deep>(?:{_KEY_PART})(?:{_KEY_DOT}(?:{_KEY_PART})){{{limit}}})"
        # A shorter chain is consumed whole, so the search does not restart at each part.
        rf"|(?:{_KEY_PART})(?:{_KEY_DOT}(?:{_KEY_PART})){{0,{limit}}}"
    )


_DEEP_KEYS: dict[int, re.Pattern[str]] = {}


def deep_key_position(text: str, limit: int) -> tuple[int, int] | None:
    """Line and column where a dotted key or table header first has more than ``limit`` parts.

    tomllib's time grows with the square of a key's depth (a 269 KB header of 40,000 levels
    takes it 2.7 s; the 1 MiB size limit allows 500,000), so such a file is refused before
    it is parsed. One linear pass of one regex.
    """
    pattern = _DEEP_KEYS.get(limit)
    if pattern is None:
        pattern = _DEEP_KEYS[limit] = _deep_keys(limit)
    for match in pattern.finditer(text):
        if match.lastgroup == "deep":
            return _line_col(text, match.start())
    return None


def nesting_position(text: str, limit: int) -> tuple[int, int]:
    """Line and column where bracket/brace nesting first exceeds ``limit`` (iterative)."""
    depth = 0
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c in "\"'":
            triple = text.startswith(c * 3, i)
            quote = c * 3 if triple else c
            j = i + len(quote)
            while j < n and not text.startswith(quote, j):
                j += 2 if (c == '"' and text[j] == "\\") else 1
            i = j + len(quote)
            continue
        if c in "[{":
            depth += 1
            if depth > limit:
                return _line_col(text, i)
        elif c in "]}":
            depth = max(0, depth - 1)
        i += 1
    return 1, 1


class _Scanner:
    def __init__(self, text: str, stop_line: int | None) -> None:
        self.s = text
        self.n = len(text)
        self.i = 0
        self.line = 1
        self.stop_line = stop_line
        self.root = _Node(None, "")
        self.table: _Node = self.root
        self.duplicate: _Node | None = None
        self.duplicate_offset = 0

    # -- low level
    def skip_ws(self) -> None:
        s, n = self.s, self.n
        while self.i < n and s[self.i] in " \t":
            self.i += 1

    def skip_ws_nl_comments(self) -> None:
        s, n = self.s, self.n
        while self.i < n:
            c = s[self.i]
            if c in " \t\r":
                self.i += 1
            elif c == "\n":
                self.i += 1
                self.line += 1
            elif c == "#":
                j = s.find("\n", self.i)
                self.i = n if j < 0 else j
            else:
                return

    def advance_to(self, j: int) -> None:
        self.line += self.s.count("\n", self.i, j)
        self.i = j

    # -- statements
    def run(self) -> None:
        while True:
            self.skip_ws_nl_comments()
            if self.i >= self.n:
                return
            if self.stop_line is not None and self.line >= self.stop_line:
                return
            if self.s[self.i] == "[":
                self.header()
            else:
                self.keyval(self.table)
            self.skip_ws()
            if self.i < self.n and self.s[self.i] == "#":
                j = self.s.find("\n", self.i)
                self.i = self.n if j < 0 else j
            if self.i < self.n and self.s[self.i] not in "\r\n":
                raise _Stop

    def header(self) -> None:
        start = self.i
        aot = self.s.startswith("[[", self.i)
        self.i += 2 if aot else 1
        self.skip_ws()
        keys = self.keys()
        self.skip_ws()
        close = "]]" if aot else "]"
        if not self.s.startswith(close, self.i):
            raise _Stop
        self.i += len(close)
        node = self.root
        for name, offset in keys[:-1]:
            node = self.extend(node.child(name))
            if node.spot is None:
                node.spot = Spot(offset, offset)
        name, offset = keys[-1]
        node = node.child(name)
        if aot:
            count = node.aot_count
            if node.spot is None:
                node.spot = Spot(offset, start)
            node.aot_count = count + 1
            node = node.child(count)
        elif node.spot is not None and node.defined:
            self.mark_duplicate(node, start)
        node.spot = Spot(offset, start)
        node.defined = True
        self.table = node

    @staticmethod
    def extend(node: _Node) -> _Node:
        """Point a header's prefix at the last element of an array of tables."""
        return node.child(node.aot_count - 1) if node.aot_count else node

    def keys(self) -> list[tuple[str, int]]:
        found: list[tuple[str, int]] = []
        while True:
            self.skip_ws()
            offset = self.i
            found.append((self.simple_key(), offset))
            self.skip_ws()
            if self.i < self.n and self.s[self.i] == ".":
                self.i += 1
                continue
            return found

    def simple_key(self) -> str:
        c = self.s[self.i]
        if c in "\"'":
            start = self.i
            self.string()
            raw = self.s[start + 1 : self.i - 1]
            return raw if c == "'" else _unescape(raw)
        match = _BARE_KEY.match(self.s, self.i)
        if not match:
            raise _Stop
        self.i = match.end()
        return match.group()

    def keyval(self, base: _Node) -> None:
        keys = self.keys()
        node = base
        for name, offset in keys[:-1]:
            node = node.child(name)
            if node.spot is None:
                node.spot = Spot(offset, offset)
        name, offset = keys[-1]
        node = node.child(name)
        if self.i >= self.n or self.s[self.i] != "=":
            raise _Stop
        self.i += 1
        self.skip_ws()
        if node.defined:
            self.mark_duplicate(node, offset)
        node.defined = True
        node.spot = Spot(offset, self.i)
        self.value(node)

    def mark_duplicate(self, node: _Node, offset: int) -> None:
        if self.duplicate is None:
            self.duplicate = node
            self.duplicate_offset = offset

    # -- values
    def value(self, node: _Node) -> None:
        c = self.s[self.i]
        if c in "\"'":
            self.string()
        elif c == "[":
            self.array(node)
        elif c == "{":
            self.inline_table(node)
        else:
            j = self.i
            s, n = self.s, self.n
            while j < n and s[j] not in ",]}\n#":
                j += 1
            if j == self.i:
                raise _Stop
            self.i = j
            # Bare scalars may end in spaces before a comment or newline; leave those.

    def string(self) -> None:
        s = self.s
        c = s[self.i]
        if s.startswith(c * 3, self.i):
            j = self.i + 3
            while True:
                k = s.find(c * 3, j)
                if k < 0:
                    raise _Stop
                if c == '"' and _escaped(s, k):
                    j = k + 1
                    continue
                # Up to two quotes directly before the closing triple belong to the content.
                end = k + 3
                while end < self.n and s[end] == c and end - k < 5:
                    end += 1
                self.advance_to(end)
                return
        j = self.i + 1
        while True:
            k = s.find(c, j)
            nl = s.find("\n", j)
            if k < 0 or (0 <= nl < k):
                raise _Stop
            if c == '"' and _escaped(s, k):
                j = k + 1
                continue
            self.i = k + 1
            return

    def array(self, node: _Node) -> None:
        self.i += 1
        index = 0
        while True:
            self.skip_ws_nl_comments()
            if self.s[self.i] == "]":
                self.i += 1
                return
            item = node.child(index)
            item.spot = Spot(self.i, self.i)
            self.value(item)
            index += 1
            self.skip_ws_nl_comments()
            if self.s[self.i] == ",":
                self.i += 1
            elif self.s[self.i] != "]":
                raise _Stop

    def inline_table(self, node: _Node) -> None:
        self.i += 1
        while True:
            self.skip_ws_nl_comments()
            if self.s[self.i] == "}":
                self.i += 1
                return
            self.keyval(node)
            self.skip_ws_nl_comments()
            if self.s[self.i] == ",":
                self.i += 1
            elif self.s[self.i] != "}":
                raise _Stop


def _escaped(s: str, k: int) -> bool:
    backslashes = 0
    j = k - 1
    while j >= 0 and s[j] == "\\":
        backslashes += 1
        j -= 1
    return backslashes % 2 == 1


def _unescape(raw: str) -> str:
    if "\\" not in raw:
        return raw
    try:
        import tomllib

        return tomllib.loads(f'k = "{raw}"')["k"]
    except Exception:
        return raw
