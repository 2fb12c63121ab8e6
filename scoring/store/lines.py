"""How every JSON Lines and TSV input is cut into lines (workspace files, reviews, judges' caches,
baselines, and every importer's files), and the JSON whitespace that makes a line blank.

- A line ends only at a line feed (LF, U+000A): JSON Lines' rule. A carriage return just before the
  line feed belongs to the line ending, so a CRLF file reads as its LF twin. Every other character
  is part of the line: U+2028, U+2029, U+0085, form feed, vertical tab, a carriage return alone
  (`str.splitlines` breaks at all of these, so no reader uses it).
- A UTF-8 byte-order mark at the start of the file is not part of line 1. Whether a file may carry
  one is its reader's rule: workspace files refuse it (`has_bom`), importers accept it.
- Lines are numbered from 1, blank lines included. Each line is decoded as UTF-8 on its own, so a
  bad byte costs its line only.

`Lines` reads a file by these rules, `split_lines` a text already decoded. The set-based suite
reader splits in SQL at `LINE_END_SQL` (`scoring.store.suite_bulk`). The records' reader
(`scoring.store.records.READ_LINES`) is DuckDB's CSV reader, which also ends a line at a carriage
return alone: a records line holding one between JSON tokens is cut in two there.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

LINE_END = "\n"
"""The one character that ends a line."""

LINE_END_SQL = f"chr({ord(LINE_END)})"
"""`LINE_END` as a DuckDB expression."""

_LF = LINE_END.encode()
_CRLF = b"\r" + _LF

BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte-order mark."""

JSON_SPACE = " \t\r\n"
"""The whitespace JSON allows between tokens: a line of only these is blank, in a workspace file."""

JSON_SPACE_SQL = " || ".join(f"chr({ord(c)})" for c in JSON_SPACE)
"""`JSON_SPACE` as a DuckDB string expression (for `trim`)."""

JSON_SPACE_CLASS = "[" + "".join(f"\\x{ord(c):02x}" for c in JSON_SPACE) + "]"
"""A regular-expression class of one `JSON_SPACE` character, read alike by Python and by DuckDB's RE2."""


@dataclass(frozen=True)
class Unreadable:
    """A line `Lines` cannot give as text: longer than its limit (`too_long`), or not UTF-8 (`byte`, the
    0-based offset in the line of its first byte that is not). `text` is what it holds, bad bytes
    replaced by U+FFFD (the beginning only of a line too long): for messages and guesses, never data."""

    text: str
    byte: int | None = None
    too_long: bool = False


class Lines:
    """``(line number, text)`` for each line of a file, by the rules of the module docstring; a line
    that cannot be text comes as ``(line number, Unreadable)``.

    The text holds no line ending, unless `keep_ends`: then it ends as the line did (LF, CRLF, or
    nothing on a last line without one), which a JSON parser reads as whitespace, so its message
    about a line cut short names what it saw. Opening the file raises `OSError` at once. `bom`
    tells, once line 1 is read, whether the file started with a byte-order mark (never part of the
    text). With `max_bytes`, a line of more bytes (its ending not counted) is `Unreadable` with
    `too_long`, and is never held in memory whole."""

    def __init__(self, path: Path | str, *, keep_ends: bool = False, max_bytes: int | None = None):
        self.path = Path(path)
        self.bom = False
        self._keep_ends = keep_ends
        self._max_bytes = max_bytes
        self._handle = self.path.open("rb", buffering=1 << 20)

    def __iter__(self) -> Iterator[tuple[int, str | Unreadable]]:
        most, keep_ends = self._max_bytes, self._keep_ends
        limit = -1 if most is None else most + len(BOM) + len(_CRLF)
        handle = self._handle
        with handle:
            number = 0
            while raw := handle.readline(limit):
                number += 1
                cut = len(raw) == limit and not raw.endswith(_LF)
                if cut:  # the line goes on: read on to its end without holding it
                    rest = raw
                    while not rest.endswith(_LF) and (rest := handle.readline(limit)):
                        pass
                if number == 1 and raw.startswith(BOM):
                    self.bom = True
                    raw = raw[len(BOM):]
                end = len(raw) - (len(_CRLF) if raw.endswith(_CRLF) else len(_LF) if raw.endswith(_LF) else 0)
                if cut or (most is not None and end > most):
                    yield number, Unreadable(raw[:end].decode("utf-8", "replace"), too_long=True)
                    continue
                if not keep_ends:
                    raw = raw[:end]
                try:
                    yield number, raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    yield number, Unreadable(raw[:end].decode("utf-8", "replace"), byte=error.start)


def split_lines(text: str) -> list[str]:
    """The lines of a decoded text by the rules of the module docstring (a byte-order mark is the
    decoder's business: ``utf-8-sig`` drops it). A final line feed ends the last line, it starts no
    empty one."""
    parts = text.split(LINE_END)
    last = parts.pop()
    lines = [part[:-1] if part.endswith("\r") else part for part in parts]
    return lines + [last] if last else lines


def has_bom(path: Path) -> bool:
    """Whether a file starts with a UTF-8 byte-order mark (refused in a workspace: docs/formats.md)."""
    with path.open("rb") as handle:
        return handle.read(len(BOM)) == BOM
