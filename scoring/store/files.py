"""The rules every workspace file keeps, and how files are read: IDs and folder names, strict JSON
(no NaN, no key twice), JSON lines with their line numbers, the position of a JSON object's keys
(content hashes are `scoring.store.hashes`).

Every module that reads a workspace file (suites, runs, reviews, judges) reads it through here, so a
problem is reported the same way everywhere: file, line, field, rule. Lines are cut by
`scoring.store.lines`; every JSON text any reader or importer parses is parsed here (`parse_json_line`,
`parse_json`), so no reader keeps one of two values of a key.
"""
from __future__ import annotations

import gc
import json
import re
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import Problems, invalid
from .lines import BOM, JSON_SPACE, JSON_SPACE_CLASS, Lines

WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
              "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
"""Every character Python counts as whitespace (`str.isspace`, what `str.strip()` removes), written out
so that a pattern built from it means the same in Python and in DuckDB's RE2, whose `\\s` is ASCII.
The rule of text (an ID holds none, a name is more than these); JSON's own whitespace, which makes a
line blank, is `scoring.store.lines.JSON_SPACE`."""

ID_PATTERN = rf"[^{WHITESPACE}\x00-\x1f\x7f-\x9f]{{1,128}}"
"""A workspace ID (document, question, claim): 1-128 characters, no whitespace or control characters.
TREC docnos (capitals, dots) and chunk IDs (`doc#3`) qualify; `evaluate` keeps the seed's stricter rule.
The same pattern checks IDs in Python and in SQL."""

WORKSPACE_ID = re.compile(ID_PATTERN)

FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""Suite and run IDs are folder names: letters, digits, '.', '_', '-', at most 64 characters."""

MAX_GRADE = 1000
"""Relevance grades lie in -MAX_GRADE..MAX_GRADE (TREC uses -2..4; the bound keeps them in an INTEGER)."""

MAX_LINE_BYTES = 8 * 1024 * 1024

BOM_RULE = "the file starts with a byte-order mark; save it as UTF-8 without BOM"
"""The problem of a workspace file that starts with a byte-order mark (`scoring.store.lines.has_bom`)."""

def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


class DuplicateKey(ValueError):
    """A JSON object holds a key twice (parsers disagree on which value wins, so no reader keeps one).
    `keys`: the keys repeated; `lineno`: the line of their object, when `parse_json` found it."""

    def __init__(self, keys: list[str]):
        super().__init__(f"a key appears twice in one object: {', '.join(map(repr, keys))}")
        self.keys = keys
        self.lineno: int | None = None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise DuplicateKey(sorted({key for key in keys if keys.count(key) > 1}))
    return dict(pairs)


_DECODERS = {
    False: json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_unique_keys),
    True: json.JSONDecoder(object_pairs_hook=_unique_keys),
}
"""The strict parsers: no key twice; with `allow_nan`, NaN and Infinity read as Python writes them."""


def _loads(text: str, allow_nan: bool = False) -> Any:
    """Strict JSON: no NaN/Infinity (unless `allow_nan`), no key twice in one object (parsers disagree
    on which wins)."""
    try:
        return _DECODERS[allow_nan].decode(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None

_PLAIN_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_PLAIN_DECODERS = {False: _PLAIN_DECODER, True: json.JSONDecoder()}

_KEY_END = re.compile(f'"{JSON_SPACE_CLASS}*:')
"""Where a key can end: its closing quote, optional JSON whitespace, a colon."""

_QUOTE_THEN_SPACE = re.compile(f'"{JSON_SPACE_CLASS}')

def _no_key_lost(text: str, value: dict[str, Any]) -> bool:
    """Whether the object line `text`, parsed into `value` by a parser that keeps the last of two
    equal keys, provably held no key twice.

    Every key of the text is followed by a colon, directly so when no quote in the text is followed
    by whitespace; so the text's colons, then its `":` sequences, then its `"<space>:` sequences
    bound its keys from above, while the keys of `value` and of the objects directly inside it
    bound them from below. Equal bounds: no key was lost. Unequal ones prove nothing (a colon in a
    string, an object nested deeper): the caller parses again, strictly."""
    shown = len(value)
    for item in value.values():
        if type(item) is dict:
            shown += len(item)
    if text.count(":") == shown:
        return True
    if _QUOTE_THEN_SPACE.search(text):
        return len(_KEY_END.findall(text)) == shown
    return text.count('":') == shown

def _loads_object_line(text: str, allow_nan: bool = False) -> Any:
    """`_loads`, faster for the usual line: the same value, and the same error for every bad line.

    The plain parser's result is returned when it is an object that lost no key (`_no_key_lost`);
    any other line (not JSON, not an object, a key twice, a colon inside a string, ...) is parsed
    again by `_loads`, which raises or returns exactly what it would have on its own."""
    try:
        value = _PLAIN_DECODERS[allow_nan].decode(text)
    except (ValueError, RecursionError):
        return _loads(text, allow_nan)
    if type(value) is dict and _no_key_lost(text, value):
        return value
    return _loads(text, allow_nan)


def parse_json(text: str, *, allow_nan: bool = False) -> Any:
    """A whole JSON text (a file), by the rules of `parse_json_line`; a `DuplicateKey` names the line
    of the object holding the key twice (`lineno`), as a syntax error does."""
    try:
        return _loads(text, allow_nan)
    except DuplicateKey as error:
        error.lineno = _line_of_duplicate(text)
        raise


def _line_of_duplicate(text: str) -> int | None:
    """The line where the innermost object holding a key twice starts (the error path of `parse_json`:
    parsed again by the pure-Python scanner, which tells where each object starts)."""
    starts: list[int] = []
    decoder = json.JSONDecoder(object_pairs_hook=_unique_keys)

    def parse_object(s_and_end: tuple[str, int], *args: Any) -> Any:
        try:
            return json.decoder.JSONObject(s_and_end, *args)
        except DuplicateKey:
            starts.append(s_and_end[1] - 1)
            raise

    decoder.parse_object = parse_object
    decoder.scan_once = json.scanner.py_make_scanner(decoder)
    try:
        decoder.decode(text)
    except (ValueError, RecursionError):
        pass
    return text.count("\n", 0, starts[0]) + 1 if starts else None


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while many objects without reference cycles are built
    (parsed JSON lines, a suite's questions, Arrow input columns): each collection would walk all of
    them again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

_FREEZE_AT = 100_000
"""A suite of at least this many documents, questions and chunks is moved, once loaded, to the
garbage collector's permanent generation (`gc.freeze`, which moves every object then alive): it
holds no reference cycles, reference counting frees it when dropped, and no later collection of
the process walks its objects again (each walk of a 1M-record suite costs about a second)."""

def key_lines(text: str) -> dict[str, int]:
    """1-based line of each top-level key of a JSON object text; "" maps to the opening brace's line.

    Only called on text that already parsed, so problems in `suite.json` and `manifest.json` can name
    the line of the field they are about."""
    space = re.compile(f"{JSON_SPACE_CLASS}*")
    decoder = json.JSONDecoder()
    pos = space.match(text).end()
    found = {"": text.count("\n", 0, pos) + 1}
    if text[pos:pos + 1] != "{":
        return found
    pos = space.match(text, pos + 1).end()
    try:
        while text[pos:pos + 1] == '"':
            key, end = json.decoder.scanstring(text, pos + 1)
            found.setdefault(key, text.count("\n", 0, pos) + 1)
            pos = space.match(text, end).end() + 1
            _, pos = decoder.raw_decode(text, space.match(text, pos).end())
            pos = space.match(text, pos).end()
            if text[pos:pos + 1] != ",":
                break
            pos = space.match(text, pos + 1).end()
    except ValueError:
        pass
    return found

def read_json_file(path: Path, problems: Problems, lines: dict[str, int] | None = None) -> dict[str, Any] | None:
    """A whole-file JSON object, or None with the problem recorded; `lines` receives `key_lines`."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        problems.add(f"cannot read the file ({error.strerror})", path=str(path))
        return None
    if raw.startswith(BOM):
        problems.add(BOM_RULE, path=str(path), line=1)
        return None
    try:
        text = raw.decode("utf-8")
        value = _loads(text)
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        problems.add("the file is not valid UTF-8", path=str(path), line=line)
        return None
    except ValueError as error:
        line = getattr(error, "lineno", None)
        problems.add(f"not valid JSON ({getattr(error, 'msg', error)})", path=str(path), line=line)
        return None
    if not isinstance(value, dict):
        problems.add("expected a JSON object", path=str(path), line=key_lines(text)[""])
        return None
    if lines is not None:
        lines.update(key_lines(text))
    return value

LENIENT_SUSPECTS = rf",{JSON_SPACE_CLASS}*[}}\]]"
"""A comma before a closing bracket, which DuckDB's JSON parser accepts and strict JSON does not, can
only be on a line matching this; `not_strict_json` decides. (DuckDB also reads NaN and Infinity: the
rules refuse them as values of the fields that take numbers, and every other field by its type.)"""


def not_strict_json(con: Any, relation: str) -> list[tuple[Any, int]]:
    """(run_id, line) of the lines of `relation` (a relation with run_id, line, raw) that DuckDB's parser
    reads but strict JSON refuses: the few lines matching `LENIENT_SUSPECTS` are parsed again in Python
    (a key twice is left to the rules that name it)."""
    suspects = con.execute(f"SELECT run_id, line, raw FROM {relation} WHERE regexp_matches(raw, ?) ORDER BY 1, 2",
                           [LENIENT_SUSPECTS]).fetchall()
    refused = []
    for run_id, line, raw in suspects:
        try:
            _PLAIN_DECODER.decode(raw)
        except (ValueError, RecursionError):
            refused.append((run_id, line))
    return refused


def parse_json_line(text: str, *, allow_nan: bool = False) -> Any:
    """One line of a JSON Lines file, parsed by the rules every reader and importer keeps: strict JSON,
    no key twice in one object (`DuplicateKey`); NaN and Infinity refused, unless `allow_nan` (an
    importer reads them as Python writes them). ValueError when the line breaks a rule."""
    return _loads_object_line(text, allow_nan)


def iter_json_lines(path: Path, problems: Problems) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of a workspace file (`scoring.store.lines`; a line of
    `JSON_SPACE` only is blank, the file carries no byte-order mark, a line is at most `MAX_LINE_BYTES`);
    problems recorded for the rest."""
    try:
        lines = Lines(path, keep_ends=True, max_bytes=MAX_LINE_BYTES)
    except OSError as error:
        problems.add(f"cannot read the file ({error.strerror})", path=str(path))
        return
    seen_any = False
    for number, text in lines:
        if number == 1 and lines.bom:
            problems.add(BOM_RULE, path=str(path), line=1)
        if type(text) is not str:
            seen_any = True
            problems.add(f"line longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB" if text.too_long else
                         "the line is not valid UTF-8", path=str(path), line=number)
            continue
        if not text.startswith("{") and not text.strip(JSON_SPACE):
            continue
        seen_any = True
        try:
            value = _loads_object_line(text)
        except ValueError as error:
            problems.add(f"not valid JSON ({getattr(error, 'msg', error)})", path=str(path), line=number)
            continue
        if not isinstance(value, dict):
            problems.add("expected a JSON object on each line", path=str(path), line=number)
            continue
        yield number, value
    if not seen_any:
        problems.add("the file holds no records", path=str(path))


_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")


def parse_toml(raw: bytes, *, path: str, what: str) -> tuple[dict[str, Any], str]:
    """A TOML file's document and text; ValidationError naming the file (and the line and column of a
    syntax error) when it is not UTF-8 or not TOML. `what`: the file in words ("the policy")."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise invalid(f"{what} is not UTF-8 text ({error.reason})", path=path) from None
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as error:
        found = _TOML_POSITION.search(str(error))
        message = _TOML_POSITION.sub("", str(error)).strip()
        raise invalid(f"not valid TOML: {message}" + (f" (column {found.group(2)})" if found else ""),
                      path=path, line=int(found.group(1)) if found else None) from None
