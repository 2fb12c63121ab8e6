"""Reading and validating a workspace: suites (labels) and runs (recorded outputs).

Layout (docs/formats.md):

    suites/<suite>/suite.json, documents.jsonl, questions.jsonl, chunks.jsonl (optional)
    runs/<run_id>/manifest.json, records.jsonl (or records.parquet), chunks.jsonl (optional)

Suites and manifests are small and checked here in Python; records can number millions and are
staged and checked with set-based SQL in `scoring.records`. Every problem names file, line,
question and field, and every problem in the workspace is reported, not just the first.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import Problems, ValidationError

ID_PATTERN = r"[^\s\x00-\x1f\x7f-\x9f]{1,128}"
"""A workspace ID (document, question, claim): 1-128 characters, no whitespace or control characters.
TREC docnos (capitals, dots) and chunk IDs (`doc#3`) qualify; `evaluate` keeps the seed's stricter rule."""
WORKSPACE_ID = re.compile(ID_PATTERN)
FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""Suite and run IDs are folder names: letters, digits, '.', '_', '-', at most 64 characters."""
MAX_RETRIEVED = 1000
"""A record's ranking may hold up to 1000 documents (TREC runs rank 1000)."""
MAX_CLAIMS = 100
MAX_CITATIONS = 100
MAX_LABELS = 10_000
MAX_K = 100
MAX_LINE_BYTES = 8 * 1024 * 1024
SPLITS = ("dev", "heldout")

SUITE_KEYS = {"name", "version", "corpus_version", "rubric_version", "description", "unit"}
UNITS = ("document", "chunk")
"""What labels name: documents (the default; retrieved and cited chunks stand for their documents) or,
in a passage-level suite, the suite's chunks (matched exactly)."""
CHUNK_KEYS = {"id", "doc", "doc_version", "text", "start", "end"}
DOCUMENT_KEYS = {"id", "text", "version", "title", "access"}
QUESTION_KEYS = {"id", "text", "type", "split", "critical", "tags", "caller", "relevant", "support", "claims", "disputed"}
MANIFEST_REQUIRED = (
    "run_id", "suite", "suite_version", "corpus_version", "created_at", "code_revision",
    "retrieval", "k", "prompt_revision", "model", "generation", "rubric_version",
)
MANIFEST_OPTIONAL = ("group", "repeat", "notes")


@dataclass
class Document:
    id: str
    text: str
    version: str | None
    title: str | None
    access: list[str]


@dataclass
class Chunk:
    """One line of a chunk map: a piece of document `doc` as it was at `doc_version`."""

    id: str
    doc: str
    doc_version: str
    text: str | None
    start: int | None
    end: int | None
    line: int


@dataclass
class Question:
    id: str
    position: int
    text: str
    type: str
    split: str
    critical: bool
    tags: list[str]
    caller: list[str] | None
    grades: dict[str, int]
    support: dict[str, list[str]]
    propositions: dict[str, str]
    disputed: str | None


@dataclass
class Suite:
    name: str
    folder: Path
    version: str
    corpus_version: str
    rubric_version: str
    description: str | None
    unit: str = "document"
    documents: dict[str, Document] = field(default_factory=dict)
    questions: dict[str, Question] = field(default_factory=dict)
    chunks: dict[str, Chunk] = field(default_factory=dict)
    """The suite's chunk map (`chunks.jsonl`), empty when the suite has none."""
    files_hash: str = ""
    loaded: bool = True
    """False when only suite.json was read because a database already holds this exact suite."""

    def doc_version(self, doc_id: str) -> str:
        """The version a document is at: its own `version`, else the suite's `corpus_version`."""
        return self.documents[doc_id].version or self.corpus_version


@dataclass
class Run:
    run_id: str
    folder: Path
    manifest: dict[str, Any]
    records_path: Path
    files_hash: str
    chunks: dict[str, Chunk] | None = None
    """The run's own chunk map (`runs/<run_id>/chunks.jsonl`); None: the suite's map applies."""

    @property
    def suite(self) -> str:
        return self.manifest["suite"]

    @property
    def k(self) -> int:
        return self.manifest["k"]


@dataclass
class Workspace:
    root: Path
    suites: dict[str, Suite]
    runs: dict[str, Run]


def files_hash(paths: list[Path]) -> str:
    """Content hash of files (name and bytes), used to skip unchanged suites and runs.

    A file that cannot be read (its problem is reported by the reader) hashes as its name and the error."""
    digest = hashlib.blake2b(digest_size=16)
    for path in paths:
        digest.update(path.name.encode() + b"\0")
        try:
            with path.open("rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
        except OSError as error:
            digest.update(f"\0unreadable: {error.strerror}".encode())
        digest.update(b"\0")
    return digest.hexdigest()


# --- JSON helpers -----------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        twice = sorted({key for key in keys if keys.count(key) > 1})
        raise ValueError(f"a key appears twice in one object: {', '.join(map(repr, twice))}")
    return dict(pairs)


def _loads(text: str) -> Any:
    """Strict JSON: no NaN/Infinity, no key twice in one object (parsers disagree on which wins)."""
    try:
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise ValueError("nested too deeply") from None


_JSON_SPACE = " \t\r\n"
"""The whitespace JSON allows between tokens; a line of only these is blank."""


def key_lines(text: str) -> dict[str, int]:
    """1-based line of each top-level key of a JSON object text; "" maps to the opening brace's line.

    Only called on text that already parsed, so problems in `suite.json` and `manifest.json` can name
    the line of the field they are about."""
    space = re.compile(r"[ \t\r\n]*")
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
    if raw.startswith(b"\xef\xbb\xbf"):
        problems.add("the file starts with a byte-order mark; save it as UTF-8 without BOM", path=str(path), line=1)
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


def iter_json_lines(path: Path, problems: Problems) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; problems recorded for the rest."""
    try:
        handle = path.open("rb")
    except OSError as error:
        problems.add(f"cannot read the file ({error.strerror})", path=str(path))
        return
    seen_any = False
    with handle:
        number = 0
        while raw := handle.readline(MAX_LINE_BYTES + 3):
            number += 1
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                problems.add("the file starts with a byte-order mark; save it as UTF-8 without BOM",
                             path=str(path), line=1)
                raw = raw[3:]
            if len(raw.rstrip(b"\r\n")) > MAX_LINE_BYTES:
                problems.add(f"line longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB", path=str(path), line=number)
                seen_any = True
                while not raw.endswith(b"\n") and (raw := handle.readline(MAX_LINE_BYTES + 3)):
                    pass
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                problems.add("the line is not valid UTF-8", path=str(path), line=number)
                seen_any = True
                continue
            if not text.strip(_JSON_SPACE):
                continue
            seen_any = True
            try:
                value = _loads(text)
            except ValueError as error:
                problems.add(f"not valid JSON ({getattr(error, 'msg', error)})", path=str(path), line=number)
                continue
            if not isinstance(value, dict):
                problems.add("expected a JSON object on each line", path=str(path), line=number)
                continue
            yield number, value
    if not seen_any:
        problems.add("the file holds no records", path=str(path))


# --- field checks -----------------------------------------------------------------------------


class _Checker:
    """Field checks that record a problem and return a safe default instead of raising."""

    def __init__(self, problems: Problems, path: Path, line: int | None, question: str | None = None,
                 lines: dict[str, int] | None = None):
        self.problems, self.path, self.line, self.question = problems, str(path), line, question
        self.lines = lines or {}
        """For a whole-file object: the line of each top-level key ("" = the object's first line)."""

    def add(self, rule: str, name: str | None, value: Any = ...) -> None:
        line = self.line if self.line is not None else self.lines.get(name or "", self.lines.get(""))
        self.problems.add(rule, name, value, path=self.path, line=line, question=self.question)

    def text(self, obj: dict, name: str, *, required: bool = True, nonblank: bool = True) -> str | None:
        if name not in obj or obj[name] is None:
            if required:
                self.add("required field is missing", name)
            return None
        value = obj[name]
        if not isinstance(value, str) or (nonblank and not value.strip()):
            self.add("expected a non-empty string", name, value)
            return None
        return value

    def ident(self, value: Any, name: str) -> bool:
        if not isinstance(value, str) or not WORKSPACE_ID.fullmatch(value):
            self.add("an ID is 1-128 characters with no whitespace or control characters", name, value)
            return False
        return True

    def id_list(self, value: Any, name: str, limit: int) -> list[str]:
        if not isinstance(value, list):
            self.add("expected a list of IDs", name, value)
            return []
        if len(value) > limit:
            self.add(f"at most {limit} IDs are allowed, found {len(value)}", name, value)
            return []
        out: list[str] = []
        seen: set[str] = set()
        for item in value:
            if not self.ident(item, name):
                continue
            if item in seen:
                self.add("duplicate ID", name, item)
                continue
            seen.add(item)
            out.append(item)
        return out

    def unknown_keys(self, obj: dict, allowed: set[str]) -> None:
        for key in obj:
            if key not in allowed and not key.startswith("x_"):
                self.add(f"unknown field (allowed: {', '.join(sorted(allowed))}; prefix extensions with x_)", key)


def _groups(check: _Checker, value: Any, name: str) -> list[str]:
    if not isinstance(value, list) or any(not isinstance(g, str) or not g.strip() for g in value):
        check.add("expected a list of group names", name, value)
        return []
    return list(value)


# --- suites -----------------------------------------------------------------------------------


def suite_files(folder: Path) -> list[Path]:
    """The files whose bytes make a suite's content hash."""
    chunks = folder / "chunks.jsonl"
    return [folder / "suite.json", folder / "documents.jsonl", folder / "questions.jsonl"] + (
        [chunks] if chunks.exists() else [])


def load_suite(folder: Path, problems: Problems, *, known_hash: str | None = None) -> Suite | None:
    """Read and check one suite folder; problems are recorded, not raised.

    With `known_hash` equal to the files' hash (a database already holds exactly this suite), only
    suite.json is read: documents, questions and chunks stay unloaded (`Suite.loaded` is False)."""
    meta_path = folder / "suite.json"
    meta_lines: dict[str, int] = {}
    meta = read_json_file(meta_path, problems, meta_lines)
    if meta is None:
        return None
    check = _Checker(problems, meta_path, None, lines=meta_lines)
    check.unknown_keys(meta, SUITE_KEYS)
    name = check.text(meta, "name")
    if name is not None and name != folder.name:
        check.add(f"must equal the folder name {folder.name!r}", "name", name)
    values = {key: check.text(meta, key) for key in ("version", "corpus_version", "rubric_version")}
    description = check.text(meta, "description", required=False, nonblank=False)
    unit = meta.get("unit", "document")
    if unit not in UNITS:
        check.add("expected 'document' (labels name documents) or 'chunk' (labels name the chunks of "
                  "chunks.jsonl)", "unit", unit)
        return None
    if name is None or None in values.values():
        return None
    suite = Suite(name, folder, values["version"], values["corpus_version"], values["rubric_version"], description,
                  unit)
    if known_hash is not None and all(p.exists() for p in suite_files(folder)):
        digest = files_hash(suite_files(folder))
        if digest == known_hash:
            suite.files_hash, suite.loaded = digest, False
            return suite
    _load_documents(suite, folder / "documents.jsonl", problems)
    chunks_path = folder / "chunks.jsonl"
    if chunks_path.exists():
        suite.chunks = load_chunks(chunks_path, suite, problems)
    elif unit == "chunk":
        problems.add("a passage-level suite (unit 'chunk') needs chunks.jsonl: its labels name those chunks",
                     path=str(chunks_path))
    _load_questions(suite, folder / "questions.jsonl", problems)
    hashed = [meta_path, folder / "documents.jsonl", folder / "questions.jsonl"]
    suite.files_hash = files_hash(hashed + ([chunks_path] if chunks_path.exists() else []))
    return suite


def load_chunks(path: Path, suite: Suite, problems: Problems, *, run_id: str | None = None,
                other_corpus: bool = False) -> dict[str, Chunk]:
    """Read and check a chunk map (the suite's, or run `run_id`'s own).

    Each chunk names a document of the suite and the version of it the chunk was cut from. That
    version must be the suite's (`Suite.doc_version`), except in a run whose manifest declares
    another corpus version (`other_corpus`: an index built from an older corpus)."""
    chunks: dict[str, Chunk] = {}
    for line, obj in iter_json_lines(path, problems):
        check = _Checker(problems, path, line)
        check.unknown_keys(obj, CHUNK_KEYS)
        chunk_id = obj.get("id")
        if not check.ident(chunk_id, "id"):
            continue
        if chunk_id in chunks:
            check.add(f"duplicate chunk ID (first on line {chunks[chunk_id].line})", "id", chunk_id)
            continue
        if chunk_id in suite.documents:
            check.add(f"is also a document of suite {suite.name!r}; a chunk ID must differ from every document ID",
                      "id", chunk_id)
            continue
        doc = obj.get("doc")
        if doc is None:
            check.add("required field is missing (the document this chunk was cut from)", "doc")
        elif check.ident(doc, "doc") and doc not in suite.documents:
            check.add(f"is not a document of suite {suite.name!r} v{suite.version}", "doc", doc)
            doc = None
        version = check.text(obj, "doc_version")
        text = check.text(obj, "text", required=False, nonblank=False)
        offsets = []
        for key in ("start", "end"):
            value = obj.get(key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                check.add("a character offset is a whole number >= 0", key, value)
                value = None
            offsets.append(value)
        start, end = offsets
        if start is not None and end is not None and end < start:
            check.add(f"the chunk ends before it starts (start {start})", "end", end)
        if isinstance(doc, str) and doc in suite.documents and version is not None:
            current = suite.doc_version(doc)
            if version != current and not other_corpus:
                if run_id is None:
                    rule = (f"is not the version of document {doc!r} in suite {suite.name!r} ({current!r}): chunk "
                            f"{chunk_id!r} must be cut from the suite's version of its document")
                else:
                    rule = (f"is not the version of document {doc!r} in suite {suite.name!r} ({current!r}): chunk "
                            f"{chunk_id!r} of run {run_id!r} comes from a stale index; re-index against corpus "
                            f"{suite.corpus_version!r}, or declare the index's corpus_version in the manifest "
                            "(the run is then refused beside runs on the current corpus)")
                check.add(rule, "doc_version", version)
        # Registered even when a field is broken, so records naming it are not also flagged as unknown.
        chunks[chunk_id] = Chunk(chunk_id, doc if isinstance(doc, str) else "", version or "", text, start, end,
                                 line)
    return chunks


def _load_documents(suite: Suite, path: Path, problems: Problems) -> None:
    for line, obj in iter_json_lines(path, problems):
        check = _Checker(problems, path, line)
        check.unknown_keys(obj, DOCUMENT_KEYS)
        doc_id = obj.get("id")
        if not check.ident(doc_id, "id"):
            continue
        if doc_id in suite.documents:
            check.add("duplicate document ID", "id", doc_id)
            continue
        text = check.text(obj, "text")
        version = check.text(obj, "version", required=False)
        title = check.text(obj, "title", required=False, nonblank=False)
        access = _groups(check, obj["access"], "access") if obj.get("access") is not None else []
        # Registered even when a field is broken, so questions and records citing it are not also flagged.
        suite.documents[doc_id] = Document(doc_id, text or "", version, title, access)


def _load_questions(suite: Suite, path: Path, problems: Problems) -> None:
    where = f"suite {suite.name!r} v{suite.version}"
    if suite.unit == "chunk":
        labelled = suite.chunks
        what = f"is not a chunk of {where} (unit 'chunk': labels name the chunks of chunks.jsonl)"
    else:
        labelled, what = suite.documents, f"is not a document of {where}"
    for line, obj in iter_json_lines(path, problems):
        qid = obj.get("id")
        check = _Checker(problems, path, line, qid if isinstance(qid, str) else None)
        check.unknown_keys(obj, QUESTION_KEYS)
        if not check.ident(qid, "id"):
            continue
        if qid in suite.questions:
            check.add("duplicate question ID", "id", qid)
            continue
        text = check.text(obj, "text")
        qtype = check.text(obj, "type")
        split = obj.get("split")
        if split not in SPLITS:
            check.add("expected 'dev' or 'heldout'", "split", split)
        critical = obj.get("critical", False)
        if not isinstance(critical, bool):
            check.add("expected true or false", "critical", critical)
        tags = obj.get("tags", [])
        if not isinstance(tags, list) or any(not isinstance(t, str) or not t.strip() for t in tags):
            check.add("expected a list of tag strings", "tags", tags)
            tags = []
        caller = _groups(check, obj["caller"], "caller") if obj.get("caller") is not None else None

        grades: dict[str, int] = {}
        relevant = obj.get("relevant")
        if relevant is None:
            check.add("required field is missing (use [] for an unanswerable question)", "relevant")
        elif isinstance(relevant, list):
            grades = {doc: 1 for doc in check.id_list(relevant, "relevant", MAX_LABELS)}
        elif isinstance(relevant, dict):
            if len(relevant) > MAX_LABELS:
                check.add(f"at most {MAX_LABELS} labelled documents, found {len(relevant)}", "relevant", relevant)
            for doc, grade in list(relevant.items())[:MAX_LABELS]:
                if not check.ident(doc, "relevant"):
                    continue
                if not isinstance(grade, int) or isinstance(grade, bool):
                    check.add("a relevance grade is a whole number", f"relevant[{doc!r}]", grade)
                    continue
                grades[doc] = grade
        else:
            check.add("expected a list of document IDs or a map document ID -> grade", "relevant", relevant)
        for doc in grades:
            if doc not in labelled:
                check.add(what, "relevant", doc)
        positive = {doc for doc, grade in grades.items() if grade > 0}

        support: dict[str, list[str]] = {}
        raw_support = obj.get("support", {})
        if not isinstance(raw_support, dict):
            check.add("expected a map claim ID -> supporting document IDs", "support", raw_support)
            raw_support = {}
        for claim, docs in raw_support.items():
            if not check.ident(claim, "support"):
                continue
            listed = check.id_list(docs, f"support[{claim!r}]", MAX_CITATIONS)
            if docs == []:
                check.add("an expected claim needs at least one supporting document", f"support[{claim!r}]", docs)
            outside = [d for d in listed if d not in positive]
            if outside:
                check.add("supporting documents must be labelled relevant (grade > 0)", f"support[{claim!r}]", outside)
            support[claim] = listed
        if support and not positive:
            check.add("expected claims need relevant documents", "support", sorted(support))

        propositions: dict[str, str] = {}
        raw_claims = obj.get("claims", {})
        if not isinstance(raw_claims, dict):
            check.add("expected a map claim ID -> proposition", "claims", raw_claims)
            raw_claims = {}
        for claim, words in raw_claims.items():
            if claim not in support:
                check.add("a proposition for a claim that is not an expected claim in 'support'", "claims", claim)
            elif not isinstance(words, str) or not words.strip():
                check.add("a proposition is a non-empty string", f"claims[{claim!r}]", words)
            else:
                propositions[claim] = words
        disputed = check.text(obj, "disputed", required=False)
        # Registered even when a field is broken, so records of the question are not also flagged as unknown.
        suite.questions[qid] = Question(
            qid, len(suite.questions), text or "", qtype or "", split if split in SPLITS else "",
            critical is True, list(tags), caller, grades, support, propositions, disputed,
        )


# --- runs -------------------------------------------------------------------------------------


def load_run(folder: Path, suites: dict[str, Suite], problems: Problems,
             broken_suites: frozenset[str] = frozenset()) -> Run | None:
    """Read and check one run's manifest against its suite; records are checked in SQL later.

    A run of a suite in `broken_suites` (a folder whose suite.json has problems, already reported)
    is not loaded and not reported again."""
    found = Problems()
    try:
        return _load_run(folder, suites, found, broken_suites)
    finally:
        if found:
            problems.extend(ValidationError(found.items))


def _load_run(folder: Path, suites: dict[str, Suite], problems: Problems,
              broken_suites: frozenset[str]) -> Run | None:
    """`load_run` with its own collector: a run with any problem is never returned (even past the
    workspace's problem limit), so no unchecked manifest value reaches staging."""
    path = folder / "manifest.json"
    before = len(problems.items)
    manifest_lines: dict[str, int] = {}
    manifest = read_json_file(path, problems, manifest_lines)
    jsonl, parquet = folder / "records.jsonl", folder / "records.parquet"
    records = [p for p in (jsonl, parquet) if p.exists()]
    if len(records) != 1:
        rule = "holds both records.jsonl and records.parquet" if records else "has no records.jsonl or records.parquet"
        problems.add(f"the run folder {rule}", path=str(folder))
    if manifest is None:
        return None
    check = _Checker(problems, path, None, lines=manifest_lines)
    check.unknown_keys(manifest, set(MANIFEST_REQUIRED) | set(MANIFEST_OPTIONAL))
    for key in MANIFEST_REQUIRED:
        if key not in manifest or manifest[key] is None:
            check.add("required manifest field is missing", key)
    for key in ("run_id", "suite", "suite_version", "corpus_version", "created_at", "code_revision",
                "prompt_revision", "model", "rubric_version"):
        if manifest.get(key) is not None and (not isinstance(manifest[key], str) or not manifest[key].strip()):
            check.add("expected a non-empty string", key, manifest[key])
    for key in ("retrieval", "generation"):
        if manifest.get(key) is not None and not isinstance(manifest[key], dict):
            check.add("expected an object of settings", key, manifest[key])
    if manifest.get("run_id") is not None and manifest["run_id"] != folder.name:
        check.add(f"must equal the folder name {folder.name!r}", "run_id", manifest["run_id"])
    k = manifest.get("k")
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K):
        check.add(f"the context cutoff k is a whole number from 1 to {MAX_K}", "k", k)
    if manifest.get("group") is not None and (not isinstance(manifest["group"], str) or not manifest["group"].strip()):
        check.add("expected a non-empty string", "group", manifest["group"])
    repeat = manifest.get("repeat")
    if repeat is not None and (not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1):
        check.add("a repeat number is a whole number >= 1", "repeat", repeat)
    if manifest.get("notes") is not None and not isinstance(manifest["notes"], str):
        check.add("expected a string", "notes", manifest["notes"])
    suite = suites.get(manifest.get("suite")) if isinstance(manifest.get("suite"), str) else None
    if suite is None and isinstance(manifest.get("suite"), str) and manifest["suite"] in broken_suites:
        return None
    if manifest.get("suite") is not None and suite is None and isinstance(manifest.get("suite"), str):
        check.add("is not a suite of this workspace", "suite", manifest["suite"])
    if suite is not None:
        # A run may declare another corpus_version (an index built from an older corpus): it is scored
        # against these labels, and the comparison guard refuses to set it beside runs on another corpus.
        for key, expected in (("suite_version", suite.version), ("rubric_version", suite.rubric_version)):
            if manifest.get(key) is not None and manifest[key] != expected:
                check.add(f"differs from suite {suite.name!r} ({key} {expected!r}); re-run against the current "
                          "suite or keep the older suite version in its own workspace", key, manifest[key])
    chunks_path = folder / "chunks.jsonl"
    chunks = None
    if chunks_path.exists() and suite is not None and not len(problems.items) > before:
        if suite.unit == "chunk":
            problems.add(f"suite {suite.name!r} is passage-level (unit 'chunk'): its labels name its own chunks, so "
                         "a run cannot bring another chunk map; score this run in a document-level suite",
                         path=str(chunks_path))
        else:
            chunks = load_chunks(chunks_path, suite, problems, run_id=folder.name,
                                 other_corpus=manifest.get("corpus_version") != suite.corpus_version)
    if len(problems.items) > before:
        return None
    hashed = [path, records[0]] + ([chunks_path] if chunks_path.exists() else [])
    return Run(folder.name, folder, manifest, records[0], files_hash(hashed), chunks)


def discover(root: Path, problems: Problems) -> tuple[list[Path], list[Path]]:
    """Suite and run folders of a workspace, sorted by name."""
    if not root.is_dir():
        problems.add("the workspace folder does not exist", path=str(root))
        return [], []
    suite_dirs = sorted(p for p in (root / "suites").iterdir() if p.is_dir()) if (root / "suites").is_dir() else []
    run_dirs = sorted(p for p in (root / "runs").iterdir() if p.is_dir()) if (root / "runs").is_dir() else []
    if not suite_dirs:
        problems.add("a workspace needs suites/<suite>/ folders", path=str(root / "suites"))
    for folder in [*suite_dirs, *run_dirs]:
        if not FOLDER_NAME.fullmatch(folder.name):
            problems.add("a suite or run folder name is 1-64 of letters, digits, '.', '_', '-'", path=str(folder))
    return suite_dirs, run_dirs


def load_workspace(root: Path, problems: Problems, *, stored: dict[str, str] | None = None) -> Workspace:
    """Every suite and run manifest of a workspace, checked; records are staged separately.

    `stored` maps suite -> content hash already held by a database: such a suite is not parsed
    again, unless a run brings its own chunk map (which is checked against the suite's documents)."""
    suite_dirs, run_dirs = discover(root, problems)
    stored = dict(stored or {})
    for folder in run_dirs:
        if (folder / "chunks.jsonl").exists():
            try:
                stored.pop(json.loads((folder / "manifest.json").read_text(encoding="utf-8")).get("suite"), None)
            except (OSError, ValueError, AttributeError, TypeError):
                pass
    suites: dict[str, Suite] = {}
    for folder in suite_dirs:
        suite = load_suite(folder, problems, known_hash=stored.get(folder.name))
        if suite is not None:
            suites[suite.name] = suite
    broken = frozenset(folder.name for folder in suite_dirs) - set(suites)
    runs: dict[str, Run] = {}
    for folder in run_dirs:
        run = load_run(folder, suites, problems, broken)
        if run is not None:
            runs[run.run_id] = run
    return Workspace(root, suites, runs)

