"""What every `ragslice import` shares (docs/formats.md, "Importing").

- **Declared formats.** Each importer module declares its format as an `Importer` (its source name,
  its arguments, the function that runs it and prints its summary); `scoring.io.importers` lists
  them, and the command line builds ``ragslice import <source>`` from that list.
- **Refusals.** A line (or list item) an importer cannot use is refused with its place
  (``file:line`` or ``file[i]``), field and reason: a `ValidationError` (exit code 2) and nothing
  written, unless ``--skip-bad`` is given; then the line is left out and listed with its reason,
  and the lines left out are counted. A problem that belongs to no line (a missing file, a bad
  flag, a file with nothing usable left) always refuses.
- **Nothing written unless everything is.** An importer writes into a temporary folder beside
  ``--out`` and moves it into place only when it has finished (`staged`).
- **Manifests.** Each run's ``k`` is the number of references the answer stage received: the most
  any question of the run delivered, unless ``--k`` says otherwise; formats that do not tell (TREC
  run files) use ``--k``, default `IMPORT_K`. Each manifest and suite.json carries
  ``x_provenance``: the source format, and the path and SHA-256 of every file read.
- **Documents** are named by the format's ID when it gives one, else by `context_id` of their
  normalised text; a document the files name but do not give the text of is kept with a text that
  says so.
- **Lines and JSON.** JSON Lines and TSV files are cut into lines by `scoring.store.lines` (a
  byte-order mark dropped, LF or CRLF, a line ends at a line feed only) and every JSON text is
  parsed by `scoring.store.files` (`parse_json_line`, `parse_json`): an object holding a key twice
  is refused at its line, as a workspace file is. NaN and Infinity are read, as Python writes them.
- **Notes.** An ID holding an invisible format character (`invisible`: U+200B ZERO WIDTH SPACE, ...) is
  imported as given, another ID than the one it looks like, as trec_eval reads it; each importer
  records where (`Refusals.check_id`) and prints it on a ``note:`` line (`print_notes`).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import unicodedata
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from ..errors import Problem, Problems, ValidationError
from ..store.files import FOLDER_NAME, WORKSPACE_ID, DuplicateKey, parse_json, parse_json_line
from ..store.lines import Lines, Unreadable, split_lines
from ..store.workspace import MAX_K

IMPORT_K = 10
"""Context cutoff written into the manifests of runs whose files do not record one (TREC run files)."""


# --- provenance ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """A file an importer read: its path as given and the SHA-256 of its bytes."""

    path: str
    sha256: str

    @classmethod
    def of(cls, path: str | Path) -> Source:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return cls(str(path), digest.hexdigest())

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "sha256": self.sha256}


def provenance(source_format: str, source: Source | None, inputs: Iterable[Source] = ()) -> dict[str, Any]:
    """The ``x_provenance`` object: the format, the file the run came from (`source`, with its
    SHA-256; None for a suite) and the other files read (`inputs`: labels, corpus)."""
    out: dict[str, Any] = {"source_format": source_format}
    if source is not None:
        out |= {"source": source.path, "sha256": source.sha256}
    out["inputs"] = [s.to_dict() for s in inputs]
    return out


def manifest(run_id: str, suite: str, version: str, source: str, k: int,
             origin: dict[str, Any] | None = None, notes: str | None = None) -> dict[str, Any]:
    """A run manifest for imported files: the versions are the suite's, nothing is known of the
    system but where its output came from (`source`, in words; `origin`: ``x_provenance``)."""
    out = {
        "run_id": run_id, "suite": suite, "suite_version": version, "corpus_version": version,
        "created_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "code_revision": "unknown", "retrieval": {"source": source}, "k": k,
        "prompt_revision": "none", "model": "none", "generation": {}, "rubric_version": version,
        "notes": notes or f"Imported from {source}.",
    }
    if origin is not None:
        out["x_provenance"] = origin
    return out


def suite_json(name: str, version: str, description: str, origin: dict[str, Any] | None = None,
               **extra: Any) -> dict[str, Any]:
    out = {"name": name, "version": version, "corpus_version": version, "rubric_version": version,
           "description": description, **extra}
    if origin is not None:
        out["x_provenance"] = origin
    return out


# --- files -----------------------------------------------------------------------------------------


def write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def write_lines(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def run_id(text: str, taken: set[str]) -> str:
    """A run (or suite) folder name made from `text`, not in `taken` (which it joins)."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")[:56] or "run"
    candidate, n = base, 2
    while candidate in taken or not FOLDER_NAME.fullmatch(candidate):
        candidate, n = f"{base}-{n}", n + 1
    taken.add(candidate)
    return candidate


SUITE_FILES = ("suite.json", "documents.jsonl", "questions.jsonl", "chunks.jsonl")
"""The files of a suite folder an importer owns; anything else there (reviews/) is kept."""


@contextmanager
def staged(out: Path) -> Iterator[Path]:
    """Yield an empty temporary folder beside `out` to write a workspace into.

    On success its contents move into `out`: the whole folder when `out` does not exist; else each
    ``runs/<id>`` replaces the run folder of that name, and each ``suites/<name>`` replaces that
    suite's own files (`SUITE_FILES`; one the import did not write is removed), keeping its
    reviewers' decisions. On any exception the temporary folder is removed and `out` is untouched."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValidationError(Problem(rule="exists and is not a folder", field="--out", value=str(out),
                                      has_value=True))
    parent = out.absolute().parent
    parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{out.name}.importing-", dir=parent))
    try:
        yield temp
        _move_into(temp, out)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _move_into(temp: Path, out: Path) -> None:
    if not out.exists():
        os.replace(temp, out)
        return
    for run in sorted((temp / "runs").glob("*")) if (temp / "runs").is_dir() else []:
        target = out / "runs" / run.name
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            old = temp / f".replaced-run-{run.name}"
            os.replace(target, old)
        os.replace(run, target)
    for suite in sorted((temp / "suites").glob("*")) if (temp / "suites").is_dir() else []:
        target = out / "suites" / suite.name
        target.mkdir(parents=True, exist_ok=True)
        for name in SUITE_FILES:
            if (suite / name).exists():
                os.replace(suite / name, target / name)
            elif (target / name).exists():
                (target / name).unlink()


# --- refusals and --skip-bad --------------------------------------------------------------------


def place(problem: Problem) -> str:
    """``file:line`` (or ``file[i]``, or ``file``) of a problem."""
    return f"{problem.path}:{problem.line}" if problem.line else str(problem.path)


@dataclass
class Refusals:
    """The problems of one import. `refuse` records a problem of a line (or list item) the importer
    cannot use: it is left out under ``--skip-bad`` (`skip_bad`), else it refuses the import.
    `fatal` records a problem that belongs to no line: it always refuses."""

    skip_bad: bool = False
    lines: list[Problem] = field(default_factory=list)
    fatal_problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    """Places whose input is imported but deserves a look (an ID holding an invisible character)."""

    def refuse(self, rule: str, field: str | None = None, value: Any = ..., **where: Any) -> None:
        problems = Problems()
        problems.add(rule, field, value, **where)
        self.lines.extend(problems.items)

    def refuse_all(self, problems: Iterable[Problem]) -> None:
        self.lines.extend(problems)

    def fatal(self, rule: str, field: str | None = None, value: Any = ..., **where: Any) -> None:
        problems = Problems()
        problems.add(rule, field, value, **where)
        self.fatal_problems.extend(problems.items)

    def check(self) -> None:
        """Raise every problem found so far, at once, when any refuses the import."""
        if self.fatal_problems or (self.lines and not self.skip_bad):
            raise ValidationError(sorted(self.fatal_problems + self.lines, key=_order))

    def check_fatal(self) -> None:
        """`check`, but only when a problem without a line refuses the import: reading goes on to
        find every bad line first."""
        if self.fatal_problems:
            self.check()

    def extend(self, error: ValidationError) -> None:
        """The problems of a reader's `ValidationError`: those with a line are refusals of that
        line, the others refuse the import."""
        for problem in error.problems:
            (self.lines if problem.line is not None else self.fatal_problems).append(problem)

    def check_id(self, value: Any, field: str, **where: Any) -> None:
        """Warn (`warnings`) when an ID holds an invisible format character (`invisible`): it is imported
        as given, a different ID from the one without it, as trec_eval reads it too."""
        found = invisible(value) if isinstance(value, str) else None
        if found is not None:
            problems = Problems()
            problems.add(f"holds {found}, an invisible format character: imported as given, an ID apart from "
                         f"{strip_invisible(value)!r}", field, value, **where)
            self.warnings.extend(problems.items)

    def warning_notes(self) -> list[str]:
        """The warnings as notes for the user: the first `MAX_WARNINGS` with their places, then a count."""
        shown = [str(p) for p in self.warnings[:MAX_WARNINGS]]
        if len(self.warnings) > MAX_WARNINGS:
            shown.append(f"{len(self.warnings) - MAX_WARNINGS} more IDs hold an invisible format character "
                         "(not listed)")
        return shown

    @property
    def skipped(self) -> list[Problem]:
        """The problems of the lines left out (``--skip-bad``), in file order."""
        return sorted(self.lines, key=_order) if self.skip_bad else []

    def skipped_places(self) -> list[str]:
        return list(dict.fromkeys(place(p) for p in self.skipped))

    def report(self, stream: TextIO | None = None) -> None:
        """List each skipped line with its reason, then their count (standard error)."""
        stream = stream or sys.stderr
        for problem in self.skipped:
            print(f"skipped {problem}", file=stream)
        n = len(self.skipped_places())
        if n:
            print(f"skipped {n} line{'s' if n != 1 else ''} (--skip-bad): not imported", file=stream)


MAX_WARNINGS = 10
"""At most this many warnings are listed one by one; the rest are counted."""


def invisible(text: str) -> str | None:
    """The first invisible format character (Unicode category Cf: U+200B ZERO WIDTH SPACE, U+200D, U+2060,
    U+FEFF, U+00AD SOFT HYPHEN, ...) of `text`, as ``U+200B ZERO WIDTH SPACE``; None when it holds none."""
    if text.isascii():
        return None
    for char in text:
        if unicodedata.category(char) == "Cf":
            return f"U+{ord(char):04X} {unicodedata.name(char, 'FORMAT CHARACTER')}"
    return None


def strip_invisible(text: str) -> str:
    """`text` without its invisible format characters (what a reader sees)."""
    return "".join(char for char in text if unicodedata.category(char) != "Cf")


def _order(problem: Problem) -> tuple[str, int, int]:
    path = problem.path or ""
    item = re.fullmatch(r"(.*)\[(\d+)\]", path)
    if item:
        return item.group(1), int(item.group(2)), 0
    return path, problem.line or 0, 0


@dataclass
class ImportResult:
    """What an import wrote: the suite, the run IDs, notes for the user, the lines it skipped."""

    suite: str
    runs: list[str]
    refusals: Refusals
    notes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 question``, ``2 questions``."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def report_import(out: Path, result: ImportResult, group: str) -> None:
    """What an import wrote (standard output), after the lines it skipped (standard error): the suite,
    its questions and documents, and its runs, with each run's k (`group` ``"k"``) or the questions
    of each split after the count (``"split"``: ``result.counts`` holds ``split:<name>``)."""
    result.refusals.report()
    parts = ", ".join(f"{key.split(':', 1)[1]} {n}" for key, n in result.counts.items() if key.startswith(group + ":"))
    runs = f"runs {', '.join(result.runs)}" if result.runs else "no runs"
    counts = f" ({parts})" if group == "split" else ""
    if group == "k" and result.runs:
        runs = "runs " + ", ".join(f"{r} (k = {result.counts['k:' + r]})" for r in result.runs)
    print(f"wrote {out}: suite {result.suite}, {counted(result.counts['questions'], 'question')}{counts}, "
          f"{counted(result.counts['documents'], 'document')}, {runs}")
    print_notes(result)


def print_notes(result: ImportResult) -> None:
    """The import's notes on standard output, each on a ``note:`` line: the warnings of its refusals (an
    ID holding an invisible character, with its place), then the importer's own."""
    for note in result.refusals.warning_notes() + result.notes:
        print(f"note: {note}")


@dataclass(frozen=True)
class Importer:
    """One format of ``ragslice import``, declared by its module. `source` names the subcommand, `help`
    (one sentence, no final stop) and `examples` (command lines) are its help; `arguments` adds its
    arguments to its parser (every importer also takes ``--skip-bad``, added by the command line);
    `run` imports what the parsed arguments name, prints what it wrote (`report_import`) and returns
    the exit code (a `ValidationError` is the command line's to report)."""

    source: str
    help: str
    examples: tuple[str, ...]
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


# --- IDs, texts, k ---------------------------------------------------------------------------------


def as_id(value: Any) -> str | None:
    """A workspace ID from a string or a whole number (formats that allow both compare them as
    strings: ``7`` is ``"7"``), or None when `value` is neither or breaks the ID rule."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, str) and WORKSPACE_ID.fullmatch(value):
        return value
    return None


ID_RULE = "an ID is a string of 1-128 characters with no whitespace or control characters, or a whole number"


def normalise_context(text: str) -> str:
    """The form in which two contexts are compared: Unicode NFC, every run of whitespace one space,
    no leading or trailing whitespace, casefolded. Contexts equal in this form are one document."""
    return " ".join(unicodedata.normalize("NFC", text).split()).casefold()


def context_id(text: str) -> str:
    """The document ID of a context given as text only: ``ctx-`` and the first 16 hex digits of the
    SHA-256 of its normalised form (UTF-8), so the same passage is one document across samples."""
    return "ctx-" + hashlib.sha256(normalise_context(text).encode("utf-8")).hexdigest()[:16]


def check_k(k: int | None, refusals: Refusals) -> None:
    if k is not None and not 1 <= k <= MAX_K:
        refusals.fatal(f"the context cutoff k is a whole number from 1 to {MAX_K}", "--k", k)
        refusals.check()


def delivered_cutoff(k: int | None, delivered: int, refusals: Refusals, *, noun: str, field: str,
                     widest: dict[str, Any] | None, path: Path, verb: str = "delivers",
                     none_delivered: str | None = None) -> int:
    """An imported run's context cutoff: `--k` when given, else the most `noun` a line delivered
    (`delivered`, at the place `widest`), refused above `MAX_K`; with `none_delivered` (why nothing
    delivered leaves k unknown), a run that delivered nothing is refused too. At least 1."""
    if k is not None:
        return k
    if delivered > MAX_K:
        refusals.fatal(f"{verb} {delivered} {noun}; the context cutoff k is at most {MAX_K}: pass --k (1-{MAX_K}) "
                       "to score the first k", field, **(widest or {}))
    elif not delivered and none_delivered is not None:
        refusals.fatal(f"{none_delivered}: pass --k", path=str(path))
    return max(delivered, 1)


class RepeatSlots:
    """Rankings that deliver a document more than once: a record's ``retrieved`` names an ID at most
    once, but the repeat took a slot of the context. Each later occurrence becomes a chunk of its
    document (``<id>#2``, ``<id>#3``, ...; ``ctx-<hash of the id>#n`` when that would be longer than
    128 characters or is already an ID), so the chunk rule counts the document once, at its first
    slot, and the repeat keeps its slot (docs/formats.md, "Chunks")."""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)
        self.chunks: dict[tuple[str, int], str] = {}

    def ranking(self, docs: list[str]) -> list[str]:
        seen: dict[str, int] = {}
        out = []
        for doc in docs:
            seen[doc] = seen.get(doc, 0) + 1
            out.append(doc if seen[doc] == 1 else self._slot(doc, seen[doc]))
        return out

    def _slot(self, doc: str, n: int) -> str:
        if (doc, n) not in self.chunks:
            candidate = f"{doc}#{n}"
            if len(candidate) > 128 or candidate in self.taken:
                candidate = f"ctx-{hashlib.sha256(doc.encode('utf-8')).hexdigest()[:16]}#{n}"
            while candidate in self.taken:
                candidate += "+"
            self.taken.add(candidate)
            self.chunks[(doc, n)] = candidate
        return self.chunks[(doc, n)]


# --- reading JSON files ---------------------------------------------------------------------------


def read_text(path: Path, refusals: Refusals) -> str | None:
    """The file's text (UTF-8, a byte-order mark dropped), or None with the problem recorded."""
    if not path.is_file():
        refusals.fatal("no such file", path=str(path))
        return None
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        refusals.fatal("the file is not valid UTF-8", path=str(path), line=raw[:error.start].count(b"\n") + 1)
        return None


def read_jsonl(path: Path, refusals: Refusals) -> Iterator[tuple[dict[str, Any], Any]]:
    """(where, value) for each non-blank line of a JSON Lines file, read line by line
    (`scoring.store.lines`: a byte-order mark dropped, LF or CRLF); a line that is not UTF-8 or not
    JSON (`parse_json_line`: a key twice in one object included) is refused. `where` is
    ``{"path", "line"}``."""
    for where, text in read_text_lines(path, refusals, keep_ends=True):
        try:
            yield where, parse_json_line(text, allow_nan=True)
        except ValueError as error:
            refusals.refuse(f"not valid JSON ({getattr(error, 'msg', error)})", **where)


def read_text_lines(path: Path, refusals: Refusals, *, keep_ends: bool = False
                    ) -> Iterator[tuple[dict[str, Any], str]]:
    """(where, text) of each non-blank line of a UTF-8 text file (JSON Lines or TSV), read line by line
    (`scoring.store.lines`: a byte-order mark dropped, LF or CRLF, the text without its line ending
    unless `keep_ends`); a line that is not UTF-8 is refused. `where` is ``{"path", "line"}``."""
    if not path.is_file():
        refusals.fatal("no such file", path=str(path))
        return
    try:
        lines = Lines(path, keep_ends=keep_ends)
    except OSError as error:
        refusals.fatal(f"cannot read the file ({error.strerror})", path=str(path))
        return
    for number, text in lines:
        where = {"path": str(path), "line": number}
        if isinstance(text, Unreadable):
            refusals.refuse(f"not UTF-8 text (byte {text.byte + 1} of the line)", **where)
        elif text.strip():
            yield where, text


def read_corpus(path: Path, refusals: Refusals, *, id_key: str, empty_text: Callable[[str], str],
                wanted: Collection[str] | None = None) -> tuple[dict[str, dict[str, str]], int]:
    """A JSON Lines corpus (`id_key`, ``text``, optional ``title``): document ID -> ``{"title"?, "text"}``
    in corpus order for the `wanted` documents (every one when None), and how many documents the
    corpus holds. Every line is checked; an empty text is replaced by the title, else by
    `empty_text(doc)`."""
    kept: dict[str, dict[str, str]] = {}
    lines: dict[str, int] = {}
    for where, value in read_jsonl(path, refusals):
        if not isinstance(value, dict):
            refusals.refuse(f'expected a document object {{"{id_key}", "title", "text"}}', **where)
            continue
        doc, title, text = as_id(value.get(id_key)), value.get("title"), value.get("text")
        bad = False
        if doc is None:
            refusals.refuse(ID_RULE, id_key, value.get(id_key), **where)
            bad = True
        if not isinstance(text, str):
            refusals.refuse("required field is missing or not a string (the document's text)", "text", text, **where)
            bad = True
        if title is not None and not isinstance(title, str):
            refusals.refuse("expected a string or null (the document's title)", "title", title, **where)
            bad = True
        if bad:
            continue
        if doc in lines:
            refusals.refuse(f"duplicate document ID (first at line {lines[doc]})", id_key, doc, **where)
            continue
        refusals.check_id(doc, id_key, **where)
        lines[doc] = where["line"]
        if wanted is None or doc in wanted:
            title = title.strip() if title else ""
            body = text if text.strip() else title or empty_text(doc)
            kept[doc] = {**({"title": title} if title else {}), "text": body}
    return kept, len(lines)


def _jsonl_items(path: Path, text: str, refusals: Refusals) -> Iterator[tuple[dict[str, Any], Any]]:
    for number, line in enumerate(split_lines(text), 1):
        if line.strip():
            where = {"path": str(path), "line": number}
            try:
                yield where, parse_json_line(line, allow_nan=True)
            except ValueError as error:
                refusals.refuse(f"not valid JSON ({getattr(error, 'msg', error)})", **where)


def parse_file_json(text: str, path: Path, refusals: Refusals, *, column: bool = False) -> Any:
    """A whole-file JSON text (`parse_json`: a key twice in one object is refused too, at its object's
    line), or ... with the problem refusing the import (`column`: the message names the column)."""
    try:
        return parse_json(text, allow_nan=True)
    except ValueError as error:
        at = f", column {getattr(error, 'colno', '?')}" if column and not isinstance(error, DuplicateKey) else ""
        refusals.fatal(f"not valid JSON ({getattr(error, 'msg', error)}{at})", path=str(path),
                       line=getattr(error, "lineno", None))
        return ...


def _one_value(body: str) -> bool:
    """Whether `body` is one JSON value (then not JSON Lines), its keys' repeats aside."""
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


def read_json_items(path: Path, refusals: Refusals, *, noun: str,
                    wrapper: str | None = None, marker: str | None = None) -> list[tuple[dict[str, Any], Any]]:
    """(where, value) for each item of a file of JSON objects: a JSON list (`where` names the item
    as ``file[i]``, counting from 0), ``{wrapper: [...]}``, one JSON object (with `marker`, an object
    holding that key is an item, not a wrapper), or JSON Lines (`where` names the line)."""
    text = read_text(path, refusals)
    if text is None:
        return []
    body = text.strip()
    if not body:
        refusals.fatal(f"the file holds no {noun}", path=str(path))
        return []
    whole: Any = ...
    if body[0] in "[{":
        try:
            whole = parse_json(body, allow_nan=True)
        except ValueError as error:
            if body[0] == "[" or (isinstance(error, DuplicateKey) and _one_value(body)):
                refusals.fatal(f"not valid JSON ({getattr(error, 'msg', error)})", path=str(path),
                               line=getattr(error, "lineno", None))
                return []
    if wrapper is not None and isinstance(whole, dict) and wrapper in whole and (marker is None
                                                                                    or marker not in whole):
        whole = whole[wrapper]
        if not isinstance(whole, list):
            refusals.fatal(f'expected a JSON list of {noun} or {{"{wrapper}": [...]}}', wrapper, path=str(path))
            return []
    if isinstance(whole, list):
        return [({"path": f"{path}[{index}]"}, value) for index, value in enumerate(whole)]
    if isinstance(whole, dict):
        return [({"path": str(path), "line": text[:text.index("{")].count("\n") + 1}, whole)]
    return list(_jsonl_items(path, text, refusals))


def id_list(value: Any, field: str, refusals: Refusals, where: dict[str, Any], *, what: str) -> list[str] | None:
    """A list of IDs (strings or whole numbers, as strings), or None with each problem refused."""
    if not isinstance(value, list):
        refusals.refuse(f"expected a list of {what}", field, value, **where)
        return None
    out, ok = [], True
    for index, item in enumerate(value):
        doc = as_id(item)
        if doc is None:
            refusals.refuse(ID_RULE, f"{field}[{index}]", item, **where)
            ok = False
        else:
            refusals.check_id(doc, f"{field}[{index}]", **where)
            out.append(doc)
    return out if ok else None
