"""Judge files beside a suite: the declarations in ``judges.toml`` and each judge's cached answers in
``judgements/<judge>.jsonl``. A refresh reads both (it never asks a judge); `scoring.io.judges`
asks the judges and appends here.

Declarations, one table per judge, in precedence order::

    [judges.keywords]           # a program, run with the suite folder as working directory
    command = ["python3", "judges/keywords.py"]
    timeout = 10                # seconds per request (default 30; at most 600)

    [judges.mini]               # an OpenAI-compatible chat-completions server
    endpoint = "http://127.0.0.1:8000/v1/chat/completions"
    model = "some-model"
    api_key_env = "OPENAI_API_KEY"   # optional: the variable holding the key, never the key itself
    grades = true               # optional: also grade each citation full, partial or none (the request
                                # then carries the cited documents' text)

A judge's declaration hash is the sha256 (hex) of the UTF-8 bytes of its table as canonical JSON
(``json.dumps(table, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``); for an endpoint
judge, the prompt version follows it after a newline (``canonical + "\\n" + PROMPT_VERSION``).

The cache key of a request is the sha256 (hex) of the UTF-8 bytes of this exact string:

    "\\n".join([judge.declaration_hash, question_id, request["question"], request["sentence"], "\\t".join(request["citations"]), "\\n".join(c["id"] + "\\t" + c["proposition"] for c in request["claims"])])

(plain joins, no JSON formatting, so SQL computes the same key: `scoring.store.alignment.REQUEST_KEY`).
Answers are cached one a line; a changed declaration or prompt changes every key, so the judge is
asked again. Failures are not cached. Beside the answer a line keeps what it cost (`USAGE_KEYS`: the
tokens and cost the judge reported, the latency ragslice measured; null when not known) and, from a
judge that grades support, the grade of each citation (`support`).

Repeated answers (`ragslice align --repeat N --sample M`) are kept apart, in
``judgements/repeats/<judge>.jsonl``: the same fields with `repeat` (1..N) and `sample_seed`; they
measure how often the judge changes its own answer and are never read as the cache.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import Problems, invalid
from ..metrics.registry import SUPPORT_GRADES
from .files import FOLDER_NAME, WORKSPACE_ID, iter_json_lines, parse_toml
from .lines import split_lines
from .times import now, parse_time

PROMPT_VERSION = "align-v1"
"""The version of `PROMPT`; part of every endpoint judge's declaration hash, so a new prompt asks again."""

JUDGES_FILE = "judges.toml"
"""A suite's judge declarations: ``suites/<suite>/judges.toml``."""

JUDGEMENTS = "judgements"
"""The suite's folder of cached answers, one file per judge."""

DEFAULT_TIMEOUT = 30

MAX_TIMEOUT = 600

OUTCOMES = ("claims", "unlabelled", "no_claim")

CACHE_KEYS = ("key", "judge", "question_id", "sentence", "citations", "claim_ids", "confidence", "rationale", "at")
"""The fields every cache line has."""
USAGE_KEYS = ("prompt_tokens", "completion_tokens", "cost_usd", "latency_ms")
"""What an answer cost, each optional (null or absent: not known): tokens and cost as the judge reported
them, latency (ms) as ragslice measured it from request to answer."""
OPTIONAL_CACHE_KEYS = ("support", *USAGE_KEYS)
"""Fields a cache line may have: the grade of each citation (`SUPPORT_GRADES`), and `USAGE_KEYS`."""
def usage_ok(name: str, value: Any) -> bool:
    """Whether `value` is a figure `name` of `USAGE_KEYS` may hold: a whole number >= 0 for tokens, a
    finite number >= 0 otherwise."""
    kinds = int if name.endswith("_tokens") else (int, float)
    return isinstance(value, kinds) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def usage_rule(name: str) -> str:
    """What `usage_ok` asks of `name`, in words."""
    return "a whole number >= 0" if name.endswith("_tokens") else "a number >= 0"


def grades_ok(support: Any, citations: int | None) -> bool:
    """Whether `support` is one grade of `SUPPORT_GRADES` per citation (`citations`: how many; None, any)."""
    return isinstance(support, list) and all(g in SUPPORT_GRADES for g in support) and (
        citations is None or len(support) == citations)


REPEAT_KEYS = ("repeat", "sample_seed")
"""The fields a repeated answer adds to a cache line's."""
REPEATS = "repeats"
"""The folder, inside `JUDGEMENTS`, of each judge's repeated answers."""

COMMAND_KEYS = ("command", "timeout", "grades")

ENDPOINT_KEYS = ("endpoint", "model", "api_key_env", "timeout", "grades")

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Judge:
    """One declared judge: a program (`command`) or a chat-completions server (`endpoint`, `model`)."""

    name: str
    command: tuple[str, ...] | None = None
    endpoint: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    declaration_hash: str = ""
    grades: bool = False
    """Asked to grade each citation too: its requests carry the cited documents' text."""

    @property
    def kind(self) -> str:
        return "command" if self.command is not None else "endpoint"

def declaration_hash(table: dict[str, Any]) -> str:
    """sha256 hex of the table's canonical JSON, followed for an endpoint judge by a newline and
    PROMPT_VERSION (the module docstring states the rule)."""
    text = json.dumps(table, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if "endpoint" in table:
        text += "\n" + PROMPT_VERSION
    return hashlib.sha256(text.encode("utf-8")).hexdigest()

def load_judges(path: Path) -> dict[str, Judge]:
    """The judges declared in a judges.toml, in file order (their precedence). ValidationError naming
    file, line, judge, field and rule for every problem found."""
    path = Path(path)
    where = str(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise invalid(f"cannot read the judges file ({error.strerror or error})", path=where) from None
    doc, text = parse_toml(raw, path=where, what="the judges file")
    lines = _Lines(text)
    problems = Problems()
    for key in doc:
        if key != "judges":
            problems.add("unknown key; a judges file holds only [judges.<name>] tables", key, path=where,
                         line=lines.top(key))
    tables = doc.get("judges")
    if not isinstance(tables, dict) or not tables:
        problems.add('a judges file declares at least one judge: [judges.<name>] with command = [...] or '
                     'endpoint = "..." and model = "..."', "judges", path=where, line=lines.top("judges"))
        problems.raise_if_any()
    judges: dict[str, Judge] = {}
    for name, table in tables.items():
        judge = _check_judge(name, table, where, lines, problems)
        if judge is not None:
            judges[name] = judge
    problems.raise_if_any()
    return judges

def _check_judge(name: str, table: Any, path: str, lines: _Lines, problems: Problems) -> Judge | None:
    before = len(problems.items)
    header = lines.judge(name)

    table_path = "judges." + (name if FOLDER_NAME.fullmatch(name) else json.dumps(name, ensure_ascii=False))

    def add(rule: str, key: str | None, value: Any = ...) -> None:
        problems.add(rule, f"{table_path}.{key}" if key else table_path, value, path=path,
                     line=lines.judge_key(name, key) if key else header)

    if not FOLDER_NAME.fullmatch(name):
        add("a judge name is 1-64 of letters, digits, '.', '_', '-', starting with a letter or digit "
            "(its answers are cached in judgements/<name>.jsonl)", None)
    if not isinstance(table, dict):
        add("a judge is a table: [judges.<name>] with command = [...] or endpoint = \"...\"", None)
        return None
    has_command, has_endpoint = "command" in table, "endpoint" in table
    if has_command == has_endpoint:
        add("a judge has exactly one of command (a program) and endpoint (a chat-completions server)",
            None)
        allowed: tuple[str, ...] = tuple(dict.fromkeys(COMMAND_KEYS + ENDPOINT_KEYS))
    else:
        allowed = COMMAND_KEYS if has_command else ENDPOINT_KEYS
    kind = "a judge" if has_command == has_endpoint else "a command judge" if has_command else "an endpoint judge"
    for key in table:
        if key not in allowed:
            add(f"unknown key for {kind} (allowed: {', '.join(allowed)})", key)
    command = table.get("command")
    if has_command and (not isinstance(command, list) or not command
                        or not all(isinstance(part, str) for part in command) or not command[0]):
        add("command is a non-empty list of strings, the program first: command = [\"python3\", "
            "\"judges/keywords.py\"]", "command", command)
    endpoint = table.get("endpoint")
    if has_endpoint:
        parts = urllib.parse.urlsplit(endpoint) if isinstance(endpoint, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            add("endpoint is an http:// or https:// URL of a chat-completions server", "endpoint", endpoint)
        model = table.get("model")
        if not isinstance(model, str) or not model.strip():
            add("an endpoint judge names its model: a non-empty string", "model", model if "model" in table else ...)
    key_env = table.get("api_key_env")
    if "api_key_env" in table and (not isinstance(key_env, str) or not _ENV_NAME.fullmatch(key_env)):
        add("api_key_env is the name of the environment variable holding the key (letters, digits, '_'), "
            "never the key itself", "api_key_env", ... if isinstance(key_env, str) else key_env)
    timeout = table.get("timeout", DEFAULT_TIMEOUT)
    if (not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not math.isfinite(timeout)
            or not 0 < timeout <= MAX_TIMEOUT):
        add(f"timeout is a number of seconds greater than 0 and at most {MAX_TIMEOUT}", "timeout", timeout)
    grades = table.get("grades", False)
    if not isinstance(grades, bool):
        add("grades is true (grade each citation full, partial or none) or false", "grades", grades)
    if len(problems.items) > before:
        return None
    return Judge(name=name, command=tuple(command) if has_command else None,
                 endpoint=endpoint if has_endpoint else None, model=table.get("model"),
                 api_key_env=key_env, timeout=float(timeout), declaration_hash=declaration_hash(table),
                 grades=bool(grades))

class _Lines:
    """The line of a top-level key, of a ``[judges.<name>]`` header, and of a key inside that table."""

    def __init__(self, text: str):
        self.lines = split_lines(text)

    @staticmethod
    def _key(key: str) -> re.Pattern[str]:
        return re.compile(rf"""^\s*(["']?){re.escape(key)}\1\s*[=.]""")

    def top(self, key: str) -> int | None:
        pattern = self._key(key)
        for n, line in enumerate(self.lines, 1):
            if line.lstrip().startswith("["):
                break
            if pattern.match(line):
                return n
        return None

    def judge(self, name: str) -> int | None:
        pattern = re.compile(rf"""^\s*\[\s*judges\s*\.\s*(["']?){re.escape(name)}\1\s*\]""")
        return next((n for n, line in enumerate(self.lines, 1) if pattern.match(line)), None)

    def judge_key(self, name: str, key: str) -> int | None:
        start = self.judge(name)
        if start is None:
            return None
        pattern = self._key(key)
        for n in range(start + 1, len(self.lines) + 1):
            line = self.lines[n - 1]
            if line.lstrip().startswith("["):
                break
            if pattern.match(line):
                return n
        return start

def request_key(judge: Judge, question_id: str, request: dict[str, Any]) -> str:
    """The cache key of a request to a judge (the rule in the module docstring)."""
    text = "\n".join([judge.declaration_hash, question_id, request["question"], request["sentence"],
                      "\t".join(request["citations"]),
                      "\n".join(c["id"] + "\t" + c["proposition"] for c in request["claims"])])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()

@dataclass(frozen=True)
class Answer:
    """A judge's alignment of one sentence: to claims (their ids, sorted), `unlabelled` or `no_claim`; the
    grade of each citation when it gives them; what it cost (`USAGE_KEYS`, None when not known)."""

    outcome: str
    claim_ids: tuple[str, ...] = ()
    confidence: float | None = None
    rationale: str | None = None
    support: tuple[str, ...] | None = None
    prompt_tokens: int | None = field(default=None, compare=False)
    completion_tokens: int | None = field(default=None, compare=False)
    cost_usd: float | None = field(default=None, compare=False)
    latency_ms: float | None = field(default=None, compare=False)
    """What the answer cost is not what it says: two answers alike but for it are equal."""

    @property
    def label(self) -> str:
        """The alignment as one label (claim IDs joined by '+', or the outcome): what agreement compares."""
        return "+".join(self.claim_ids) if self.outcome == "claims" else self.outcome

    @property
    def claim_ids_json(self) -> list[str] | str:
        """`claim_ids` as the answer schema and the cache write it: a list, or the outcome's name."""
        return list(self.claim_ids) if self.outcome == "claims" else self.outcome

@dataclass(frozen=True)
class CachedAnswer:
    """One line of a judge's cache file, as checked."""

    key: str
    judge: str
    question_id: str
    sentence: str
    citations: tuple[str, ...]
    answer: Answer
    at: datetime
    path: str
    line: int
    repeat: int | None = None
    """The repeat's number (1..N) of a repeated answer; None in the cache."""
    sample_seed: int | None = None

def cache_path(suite_folder: Path, judge_name: str) -> Path:
    """``suites/<suite>/judgements/<judge>.jsonl``."""
    if not FOLDER_NAME.fullmatch(judge_name):
        raise invalid("a judge name is 1-64 of letters, digits, '.', '_', '-'", "judge", judge_name)
    return Path(suite_folder) / JUDGEMENTS / f"{judge_name}.jsonl"

def cache_entry(judge: Judge, question_id: str, request: dict[str, Any], answer: Answer,
                at: str | None = None) -> dict[str, Any]:
    """The cache line of an answer to a request (the optional fields only when known)."""
    entry = {"key": request_key(judge, question_id, request), "judge": judge.name, "question_id": question_id,
             "sentence": request["sentence"], "citations": list(request["citations"]),
             "claim_ids": answer.claim_ids_json, "confidence": answer.confidence, "rationale": answer.rationale,
             "at": at or now()}
    if answer.support is not None:
        entry["support"] = list(answer.support)
    for name in USAGE_KEYS:
        if getattr(answer, name) is not None:
            entry[name] = getattr(answer, name)
    return entry

def read_cache(path: Path, problems: Problems) -> dict[str, CachedAnswer]:
    """key -> answer of a judge's cache file (none when it does not exist); every line checked, problems
    recorded with file and line and the broken lines left out; a key given twice keeps its last line."""
    path = Path(path)
    out: dict[str, CachedAnswer] = {}
    if not path.exists():
        return out
    judge = path.stem
    if not FOLDER_NAME.fullmatch(judge) or path.suffix != ".jsonl":
        problems.add("a judgements file is named for its judge: 1-64 of letters, digits, '.', '_', '-', "
                     "with .jsonl", path=str(path))
        return out
    if path.stat().st_size == 0:
        return out
    for number, obj in iter_json_lines(path, problems):
        found = _check_cached(obj, judge, str(path), number, problems)
        if found is not None:
            out[found.key] = found
    return out

def _check_cached(obj: dict[str, Any], judge: str, path: str, line: int, problems: Problems, *,
                  repeated: bool = False) -> CachedAnswer | None:
    before = len(problems.items)
    question = obj.get("question_id") if isinstance(obj.get("question_id"), str) else None

    def add(rule: str, name: str | None, value: Any = ...) -> None:
        problems.add(rule, name, value, path=path, line=line, question=question)

    required = CACHE_KEYS + (REPEAT_KEYS if repeated else ())
    allowed = required + OPTIONAL_CACHE_KEYS
    what = "a repeated answer" if repeated else "a judgement"
    for key in obj:
        if key not in allowed and not key.startswith("x_"):
            add(f"unknown field ({what} has {', '.join(allowed)}; prefix extensions with x_)", key)
    for key in required:
        if key not in obj:
            add("required field is missing", key)
    support = obj.get("support")
    cited = len(obj["citations"]) if isinstance(obj.get("citations"), list) else None
    if support is not None and not grades_ok(support, cited):
        add("expected null or one grade per citation, each \"full\", \"partial\" or \"none\"", "support", support)
    for name in USAGE_KEYS:
        value = obj.get(name)
        if value is not None and not usage_ok(name, value):
            add(f"expected null or {usage_rule(name)}", name, value)
    for name in REPEAT_KEYS if repeated else ():
        value = obj.get(name)
        if name in obj and (isinstance(value, bool) or not isinstance(value, int) or value < (1 if name == "repeat" else 0)):
            add("expected a whole number >= 1" if name == "repeat" else "expected a whole number >= 0", name, value)
    if "key" in obj and (not isinstance(obj["key"], str) or not _HEX64.fullmatch(obj["key"])):
        add("expected a request key: 64 lowercase hex digits (sha256)", "key", obj["key"])
    if "judge" in obj and obj["judge"] != judge:
        add(f"must equal the file's judge {judge!r} (one file per judge)", "judge", obj["judge"])
    if "question_id" in obj and (not isinstance(question, str) or not WORKSPACE_ID.fullmatch(question)):
        add("a question ID is 1-128 characters with no whitespace or control characters", "question_id",
            obj["question_id"])
    if "sentence" in obj and not isinstance(obj["sentence"], str):
        add("expected a string", "sentence", obj["sentence"])
    citations = obj.get("citations")
    if "citations" in obj and (not isinstance(citations, list) or not all(isinstance(c, str) for c in citations)):
        add("expected a list of strings", "citations", citations)
    ids = obj.get("claim_ids")
    if "claim_ids" in obj:
        if isinstance(ids, list):
            if not ids or not all(isinstance(i, str) and WORKSPACE_ID.fullmatch(i) for i in ids):
                add("expected a non-empty list of claim IDs, \"unlabelled\" or \"no_claim\"", "claim_ids", ids)
            elif len(set(ids)) != len(ids):
                add("names a claim twice", "claim_ids", ids)
        elif ids not in ("unlabelled", "no_claim"):
            add("expected a non-empty list of claim IDs, \"unlabelled\" or \"no_claim\"", "claim_ids", ids)
    confidence = obj.get("confidence")
    if confidence is not None and (not isinstance(confidence, (int, float)) or isinstance(confidence, bool)
                                   or not 0 <= confidence <= 1):
        add("expected a number from 0 to 1, or null", "confidence", confidence)
    rationale = obj.get("rationale")
    if rationale is not None and not isinstance(rationale, str):
        add("expected a string, or null", "rationale", rationale)
    at = parse_time(obj.get("at")) if "at" in obj else None
    if "at" in obj and at is None:
        add("expected an ISO-8601 time in UTC, such as 2026-11-30T14:02:11Z", "at", obj["at"])
    if len(problems.items) > before or at is None:
        return None
    outcome = "claims" if isinstance(ids, list) else str(ids)
    answer = Answer(outcome, tuple(sorted(ids)) if isinstance(ids, list) else (),
                    None if confidence is None else float(confidence), rationale,
                    None if support is None else tuple(support),
                    *(obj.get(name) for name in USAGE_KEYS))
    return CachedAnswer(obj["key"], judge, str(question), obj["sentence"], tuple(citations), answer, at, path,
                        line, obj.get("repeat"), obj.get("sample_seed"))

def repeats_path(suite_folder: Path, judge_name: str) -> Path:
    """``suites/<suite>/judgements/repeats/<judge>.jsonl``."""
    return cache_path(suite_folder, judge_name).parent / REPEATS / f"{judge_name}.jsonl"


def read_repeats(path: Path, problems: Problems) -> list[CachedAnswer]:
    """A judge's repeated answers (none when the file does not exist), every line checked as a cache line
    with `repeat` and `sample_seed`; problems recorded with file and line, broken lines left out."""
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        return []
    if not FOLDER_NAME.fullmatch(path.stem) or path.suffix != ".jsonl":
        problems.add("a repeats file is named for its judge: 1-64 of letters, digits, '.', '_', '-', with .jsonl",
                     path=str(path))
        return []
    out = []
    for number, obj in iter_json_lines(path, problems):
        found = _check_cached(obj, path.stem, str(path), number, problems, repeated=True)
        if found is not None:
            out.append(found)
    return out


def repeat_entry(judge: Judge, question_id: str, request: dict[str, Any], answer: Answer, repeat: int,
                 sample_seed: int, at: str | None = None) -> dict[str, Any]:
    """The line of a repeated answer: the cache line's fields with the repeat's number and the sample's seed."""
    return {**cache_entry(judge, question_id, request, answer, at), "repeat": repeat, "sample_seed": sample_seed}


def append_cache(path: Path, entries: Iterable[dict[str, Any]]) -> None:
    """Append cache lines durably: written with one write under an exclusive lock and fsynced before
    this returns; a line cut short by a crash is closed first, so the new ones start lines of their own."""
    data = b"".join((json.dumps(e, ensure_ascii=False) + "\n").encode("utf-8") for e in entries)
    if not data:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            size = os.fstat(handle).st_size
            if size:
                with open(path, "rb") as reader:
                    reader.seek(size - 1)
                    if reader.read(1) != b"\n":
                        data = b"\n" + data
            view = memoryview(data)
            while view:
                view = view[os.write(handle, view):]
            os.fsync(handle)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        os.close(handle)
