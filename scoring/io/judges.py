"""Judges: programs or chat-completions servers that align answer sentences to a question's expected
claims, with every answer cached beside the suite so a re-run asks nothing.

Declarations live in ``suites/<suite>/judges.toml``, one table per judge, in precedence order::

    [judges.keywords]           # a program, run with the suite folder as working directory
    command = ["python3", "judges/keywords.py"]
    timeout = 10                # seconds per request (default 30; at most 600)

    [judges.mini]               # an OpenAI-compatible chat-completions server
    endpoint = "http://127.0.0.1:8000/v1/chat/completions"
    model = "some-model"
    api_key_env = "OPENAI_API_KEY"   # optional: the variable holding the key, never the key itself

A request is ``{"question": str, "sentence": str, "citations": [str, ...], "claims": [{"id": str,
"proposition": str}, ...]}`` with the claims sorted by id. An answer is ``{"claim_ids": [ids of the
request's claims, non-empty, no repeats] | "unlabelled" | "no_claim", "confidence": number in [0, 1]
(optional), "rationale": string (optional)}`` and nothing else. A judge that fails, times out or
answers outside that schema leaves the sentence unaligned by it (a `Failure`); it is never guessed.

A judge's declaration hash is the sha256 (hex) of the UTF-8 bytes of its table as canonical JSON
(``json.dumps(table, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``); for an endpoint
judge, the prompt version follows it after a newline (``canonical + "\\n" + PROMPT_VERSION``).

The cache key of a request is the sha256 (hex) of the UTF-8 bytes of this exact string:

    "\\n".join([judge.declaration_hash, question_id, request["question"], request["sentence"], "\\t".join(request["citations"]), "\\n".join(c["id"] + "\\t" + c["proposition"] for c in request["claims"])])

(plain joins, no JSON formatting, so SQL computes the same key). Answers are cached one a line in
``suites/<suite>/judgements/<judge>.jsonl``; a changed declaration or prompt changes every key, so
the judge is asked again. Failures are not cached: the next run asks again.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import re
import selectors
import signal
import subprocess
import threading
import time
import tomllib
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import Problems, invalid
from ..store.reviews import now, parse_time
from ..store.workspace import FOLDER_NAME, MAX_LINE_BYTES, WORKSPACE_ID, iter_json_lines

PROMPT_VERSION = "align-v1"
"""The version of `PROMPT`; part of every endpoint judge's declaration hash, so a new prompt asks again."""

PROMPT = """\
You align one sentence of an answer to the expected claims of a question.

The user message is a JSON object: "question" (the question that was asked), "sentence" (one sentence \
of the answer), "citations" (the documents the sentence cites, for context only) and "claims" (the \
question's expected claims, each with an "id" and a "proposition").

Decide which of the listed claims the sentence states. A sentence states a claim when it asserts the \
claim's proposition, in any words; one sentence may state several claims. Judge only what the sentence \
says: not whether it is true, and not whether its citations support it.

Answer with one JSON object and nothing else:
- {"claim_ids": ["<id>", ...]} when the sentence states one or more of the listed claims: their ids, \
exactly as listed, each once (a sentence that also says something else still gets these ids);
- {"claim_ids": "unlabelled"} when the sentence states something factual that none of the listed \
claims holds;
- {"claim_ids": "no_claim"} when the sentence has no factual content, such as "Here is what I found:".
You may add "confidence" (a number from 0 to 1: how sure you are) and "rationale" (one short sentence: \
why). Use no other keys."""
"""The system prompt of an endpoint judge (version `PROMPT_VERSION`); the user message is the request as JSON."""

JUDGES_FILE = "judges.toml"
"""A suite's judge declarations: ``suites/<suite>/judges.toml``."""
JUDGEMENTS = "judgements"
"""The suite's folder of cached answers, one file per judge."""
DEFAULT_TIMEOUT = 30
MAX_TIMEOUT = 600
OUTCOMES = ("claims", "unlabelled", "no_claim")
ANSWER_KEYS = ("claim_ids", "confidence", "rationale")
CACHE_KEYS = ("key", "judge", "question_id", "sentence", "citations", "claim_ids", "confidence", "rationale", "at")
COMMAND_KEYS = ("command", "timeout")
ENDPOINT_KEYS = ("endpoint", "model", "api_key_env", "timeout")
STDERR_LINES = 5
"""How many of a failed judge program's last stderr lines its Failure quotes."""
FLUSH_EVERY = 100
FLUSH_SECONDS = 5.0
"""New answers are appended to the cache at least every FLUSH_EVERY answers or FLUSH_SECONDS seconds,
and when the run ends (also when it is interrupted)."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_FENCE = re.compile(r"\A\s*```[A-Za-z]*[ \t]*\r?\n(.*?)\r?\n?[ \t]*```\s*\Z", re.DOTALL)
_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")


# --- declarations -------------------------------------------------------------------------------


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
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise invalid(f"the judges file is not UTF-8 text ({error.reason})", path=where) from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = _TOML_POSITION.search(str(error))
        message = _TOML_POSITION.sub("", str(error)).strip()
        raise invalid(f"not valid TOML: {message}" + (f" (column {found.group(2)})" if found else ""),
                      path=where, line=int(found.group(1)) if found else None) from None
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
    if len(problems.items) > before:
        return None
    return Judge(name=name, command=tuple(command) if has_command else None,
                 endpoint=endpoint if has_endpoint else None, model=table.get("model"),
                 api_key_env=key_env, timeout=float(timeout), declaration_hash=declaration_hash(table))


class _Lines:
    """The line of a top-level key, of a ``[judges.<name>]`` header, and of a key inside that table."""

    def __init__(self, text: str):
        self.lines = text.splitlines()

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


# --- requests and answers -----------------------------------------------------------------------


def request_key(judge: Judge, question_id: str, request: dict[str, Any]) -> str:
    """The cache key of a request to a judge (the rule in the module docstring)."""
    text = "\n".join([judge.declaration_hash, question_id, request["question"], request["sentence"],
                      "\t".join(request["citations"]),
                      "\n".join(c["id"] + "\t" + c["proposition"] for c in request["claims"])])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_request(request: dict[str, Any]) -> None:
    """TypeError unless the request has exactly the request schema; ValueError unless its claims are
    sorted by id, each once (the order the cache key assumes)."""
    if not isinstance(request, dict) or set(request) != {"question", "sentence", "citations", "claims"}:
        raise TypeError("a judge request has exactly question, sentence, citations and claims")
    if not isinstance(request["question"], str) or not isinstance(request["sentence"], str):
        raise TypeError("a judge request's question and sentence are strings")
    if not isinstance(request["citations"], list) or not all(isinstance(c, str) for c in request["citations"]):
        raise TypeError("a judge request's citations are a list of strings")
    claims = request["claims"]
    if (not isinstance(claims, list)
            or not all(isinstance(c, dict) and set(c) == {"id", "proposition"} and isinstance(c["id"], str)
                       and isinstance(c["proposition"], str) for c in claims)):
        raise TypeError("a judge request's claims are a list of {id, proposition} strings")
    ids = [c["id"] for c in claims]
    if ids != sorted(ids) or len(set(ids)) != len(ids):
        raise ValueError("a judge request's claims are sorted by id, each id once")


@dataclass(frozen=True)
class Answer:
    """A judge's alignment of one sentence: to claims (their ids, sorted), `unlabelled` or `no_claim`."""

    outcome: str
    claim_ids: tuple[str, ...] = ()
    confidence: float | None = None
    rationale: str | None = None

    @property
    def claim_ids_json(self) -> list[str] | str:
        """`claim_ids` as the answer schema and the cache write it: a list, or the outcome's name."""
        return list(self.claim_ids) if self.outcome == "claims" else self.outcome


@dataclass(frozen=True)
class Failure:
    """A judge that gave no usable answer to a request, and why; the sentence stays unaligned by it."""

    reason: str


def parse_answer(value: Any, claim_ids: Iterable[str]) -> Answer | Failure:
    """An answer checked against the answer schema and the request's claims; a Failure names the rule."""
    if not isinstance(value, dict):
        return Failure(f"the answer is not a JSON object: {_short(value)}")
    unknown = [k for k in value if k not in ANSWER_KEYS]
    if unknown:
        return Failure(f"answer field {unknown[0]!r}: unknown field (an answer has {', '.join(ANSWER_KEYS)})")
    known = list(claim_ids)
    ids = value.get("claim_ids")
    if "claim_ids" not in value:
        return Failure("answer field 'claim_ids': required (a list of claim ids, \"unlabelled\" or \"no_claim\")")
    if isinstance(ids, str) and ids in ("unlabelled", "no_claim"):
        outcome, chosen = ids, ()
    elif isinstance(ids, list) and ids and all(isinstance(i, str) for i in ids):
        strangers = [i for i in ids if i not in known]
        if strangers:
            return Failure(f"answer field 'claim_ids': {strangers[0]!r} is not a claim of the request "
                           f"(its claims: {', '.join(known) or 'none'})")
        if len(set(ids)) != len(ids):
            return Failure(f"answer field 'claim_ids': {_short(ids)} names a claim twice")
        outcome, chosen = "claims", tuple(sorted(ids))
    else:
        return Failure(f"answer field 'claim_ids': {_short(ids)}: expected a non-empty list of the request's "
                       "claim ids, \"unlabelled\" or \"no_claim\"")
    confidence = value.get("confidence")
    if confidence is not None and (not isinstance(confidence, (int, float)) or isinstance(confidence, bool)
                                   or not 0 <= confidence <= 1):
        return Failure(f"answer field 'confidence': {_short(confidence)}: expected a number from 0 to 1")
    rationale = value.get("rationale")
    if rationale is not None and not isinstance(rationale, str):
        return Failure(f"answer field 'rationale': {_short(rationale)}: expected a string")
    return Answer(outcome, chosen, None if confidence is None else float(confidence), rationale)


def _parse_answer_text(text: str, claim_ids: Iterable[str]) -> Answer | Failure:
    try:
        value = json.loads(text)
    except ValueError as error:
        return Failure(f"the answer is not JSON ({getattr(error, 'msg', error)}): {_short(text)}")
    return parse_answer(value, claim_ids)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _short_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _seconds(value: float) -> str:
    return f"{value:g}"


def judge_requests(judge: Judge, suite_folder: Path,
                   requests: list[tuple[str, dict[str, Any]]]) -> list[Answer | Failure]:
    """Ask the judge each (question_id, request), in order: one Answer or Failure per request."""
    return list(iter_judge(judge, suite_folder, requests))


def iter_judge(judge: Judge, suite_folder: Path,
               requests: list[tuple[str, dict[str, Any]]]) -> Iterator[Answer | Failure]:
    """`judge_requests`, yielding each result as soon as the judge gives it."""
    for _, request in requests:
        check_request(request)
    if judge.command is not None:
        yield from _ask_command(judge, Path(suite_folder), [r for _, r in requests])
    else:
        for _, request in requests:
            yield _ask_endpoint(judge, request)


# --- command judges -----------------------------------------------------------------------------


class _Program:
    """One run of a judge program: requests written to its stdin, answer lines read from its stdout,
    each with a deadline; its stderr kept (the last lines) for the failure it may cause."""

    def __init__(self, judge: Judge, folder: Path):
        self.judge = judge
        self.process = subprocess.Popen(list(judge.command or ()), cwd=folder, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        assert self.process.stdin and self.process.stdout and self.process.stderr
        self.stdin = self.process.stdin.fileno()
        self.stdout = self.process.stdout.fileno()
        os.set_blocking(self.stdin, False)
        os.set_blocking(self.stdout, False)
        self.buffer = bytearray()
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_LINES)
        self.drain = threading.Thread(target=self._drain_stderr, daemon=True)
        self.drain.start()
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.stdout, selectors.EVENT_READ)
        self.stdin_open = True
        self.released = False

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            self.stderr_tail.append(_short_text(raw.decode("utf-8", "replace").rstrip("\r\n"), 300))

    def ask(self, line: bytes) -> bytes | Failure:
        """The judge's next output line (without its newline), or why there is none. After a Failure
        the process is gone (killed, or ended by itself)."""
        deadline = time.monotonic() + self.judge.timeout
        pending = memoryview(line)
        if self.stdin_open:
            self.selector.register(self.stdin, selectors.EVENT_WRITE)
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                answer = bytes(self.buffer[:end])
                del self.buffer[: end + 1]
                if pending and self.stdin_open:  # answered before reading the whole request
                    self.selector.unregister(self.stdin)
                return answer
            if len(self.buffer) > MAX_LINE_BYTES:
                self.kill()
                return Failure(f"the answer line is longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                return Failure(f"timed out after {_seconds(self.judge.timeout)} s")
            for key, _ in self.selector.select(remaining):
                if key.fd == self.stdin:
                    try:
                        written = os.write(self.stdin, pending[:65536])
                    except BlockingIOError:
                        continue
                    except OSError:  # BrokenPipeError: it stopped reading; its output says what happened
                        self._close_stdin()
                        continue
                    pending = pending[written:]
                    if not pending:
                        self.selector.unregister(self.stdin)
                    continue
                try:
                    chunk = os.read(self.stdout, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    if pending and self.stdin_open:
                        self.selector.unregister(self.stdin)
                    return self._ended(deadline)
                self.buffer += chunk

    def _close_stdin(self) -> None:
        if self.stdin_open:
            if self.stdin in self.selector.get_map():
                self.selector.unregister(self.stdin)
            self.stdin_open = False
            try:
                self.process.stdin.close()  # type: ignore[union-attr]
            except OSError:
                pass

    def _ended(self, deadline: float) -> Failure:
        """The program closed its stdout before answering: wait for its exit (until the deadline)."""
        try:
            self.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            return Failure(f"the judge closed its output without answering and did not exit; killed after "
                           f"{_seconds(self.judge.timeout)} s{self._stderr()}")
        self._release()
        code = self.process.returncode
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        return Failure(f"the judge ended before answering ({how}){self._stderr()}")

    def _stderr(self) -> str:
        lines = [line for line in self.stderr_tail if line.strip()]
        return f"; its stderr ended with: {' | '.join(lines)}" if lines else ""

    def kill(self) -> None:
        """End the program and everything it started (its own process group)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()
        self._release()

    def finish(self) -> None:
        """No more requests: close its stdin and let it exit (killed when it outlives its timeout)."""
        self._close_stdin()
        try:
            self.process.wait(self.judge.timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return
        self._release()

    def _release(self) -> None:
        """After the exit: close the pipes (stderr once fully read; a process it started may hold it)."""
        if self.released:
            return
        self.released = True
        self._close_stdin()
        self.selector.close()
        self.drain.join(self.judge.timeout)
        self.process.stdout.close()  # type: ignore[union-attr]
        if not self.drain.is_alive():
            self.process.stderr.close()  # type: ignore[union-attr]


def _ask_command(judge: Judge, folder: Path, requests: list[dict[str, Any]]) -> Iterator[Answer | Failure]:
    """One long-lived program for every request; after a timeout, an early end or an unreadable line
    stream, a fresh program for the rest."""
    program: _Program | None = None
    try:
        for request in requests:
            if program is None:
                try:
                    program = _Program(judge, folder)
                except OSError as error:
                    yield Failure(f"cannot start the judge {list(judge.command or ())!r}: "
                                  f"{error.strerror or error}")
                    continue
            line = (json.dumps(request, ensure_ascii=False) + "\n").encode("utf-8")
            out = program.ask(line)
            if isinstance(out, Failure):
                if program.process.returncode is None:
                    program.kill()
                program = None
                yield out
                continue
            try:
                text = out.decode("utf-8")
            except UnicodeDecodeError:
                yield Failure("the answer line is not valid UTF-8")
                continue
            yield _parse_answer_text(text, [c["id"] for c in request["claims"]])
    except GeneratorExit:  # the caller has what it needs: let the program end as after the last request
        raise
    except BaseException:  # interrupted: end the program now, without waiting for it
        if program is not None:
            program.kill()
            program = None
        raise
    finally:
        if program is not None:
            program.finish()


# --- endpoint judges ----------------------------------------------------------------------------


def chat_body(judge: Judge, request: dict[str, Any]) -> dict[str, Any]:
    """What an endpoint judge is sent for one request."""
    return {"model": judge.model,
            "messages": [{"role": "system", "content": PROMPT},
                         {"role": "user", "content": json.dumps(request, ensure_ascii=False)}],
            "temperature": 0}


def _ask_endpoint(judge: Judge, request: dict[str, Any]) -> Answer | Failure:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if judge.api_key_env is not None:
        key = os.environ.get(judge.api_key_env)
        if not key:
            return Failure(f"the environment variable {judge.api_key_env} (api_key_env) is not set or empty")
        headers["Authorization"] = f"Bearer {key}"
    data = json.dumps(chat_body(judge, request), ensure_ascii=False).encode("utf-8")
    http = urllib.request.Request(str(judge.endpoint), data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(http, timeout=judge.timeout) as response:
            body = response.read(MAX_LINE_BYTES + 1)
    except urllib.error.HTTPError as error:
        detail = error.read(500).decode("utf-8", "replace").strip() if error.fp is not None else ""
        return Failure(f"the endpoint answered HTTP {error.code}" + (f": {_short(detail, 200)}" if detail else ""))
    except TimeoutError:
        return Failure(f"timed out after {_seconds(judge.timeout)} s")
    except urllib.error.URLError as error:
        if isinstance(error.reason, TimeoutError):
            return Failure(f"timed out after {_seconds(judge.timeout)} s")
        return Failure(f"cannot reach the endpoint: {error.reason}")
    except OSError as error:
        return Failure(f"the endpoint connection failed: {error}")
    if len(body) > MAX_LINE_BYTES:
        return Failure(f"the endpoint's response is longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB")
    try:
        reply = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return Failure(f"the endpoint's response is not JSON: {_short(body[:200])}")
    try:
        content = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return Failure("the endpoint's response has no choices[0].message.content")
    if not isinstance(content, str):
        return Failure(f"choices[0].message.content is not a string: {_short(content)}")
    fenced = _FENCE.match(content)
    return _parse_answer_text(fenced.group(1) if fenced else content, [c["id"] for c in request["claims"]])


# --- the cache ----------------------------------------------------------------------------------


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


def cache_path(suite_folder: Path, judge_name: str) -> Path:
    """``suites/<suite>/judgements/<judge>.jsonl``."""
    if not FOLDER_NAME.fullmatch(judge_name):
        raise invalid("a judge name is 1-64 of letters, digits, '.', '_', '-'", "judge", judge_name)
    return Path(suite_folder) / JUDGEMENTS / f"{judge_name}.jsonl"


def cache_entry(judge: Judge, question_id: str, request: dict[str, Any], answer: Answer,
                at: str | None = None) -> dict[str, Any]:
    """The cache line of an answer to a request."""
    return {"key": request_key(judge, question_id, request), "judge": judge.name, "question_id": question_id,
            "sentence": request["sentence"], "citations": list(request["citations"]),
            "claim_ids": answer.claim_ids_json, "confidence": answer.confidence, "rationale": answer.rationale,
            "at": at or now()}


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


def _check_cached(obj: dict[str, Any], judge: str, path: str, line: int, problems: Problems) -> CachedAnswer | None:
    before = len(problems.items)
    question = obj.get("question_id") if isinstance(obj.get("question_id"), str) else None

    def add(rule: str, name: str | None, value: Any = ...) -> None:
        problems.add(rule, name, value, path=path, line=line, question=question)

    for key in obj:
        if key not in CACHE_KEYS and not key.startswith("x_"):
            add(f"unknown field (a judgement has {', '.join(CACHE_KEYS)}; prefix extensions with x_)", key)
    for key in CACHE_KEYS:
        if key not in obj:
            add("required field is missing", key)
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
                    None if confidence is None else float(confidence), rationale)
    return CachedAnswer(obj["key"], judge, str(question), obj["sentence"], tuple(citations), answer, at, path,
                        line)


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


@dataclass(frozen=True)
class JudgeFailure:
    """A request the judge gave no usable answer to."""

    question_id: str
    sentence: str
    reason: str


@dataclass
class JudgeRun:
    """What `judge_missing` did. Counts are of distinct requests (by key: the same sentence with the same
    citations for the same question, from two runs, is one request): requested = cached + answered + failed."""

    judge: str
    requested: int = 0
    cached: int = 0
    answered: int = 0
    failed: int = 0
    failures: list[JudgeFailure] = field(default_factory=list)
    answers: dict[str, Answer] = field(default_factory=dict)
    """key -> the answer, cached or new, for every request not failed."""


def judge_missing(judge: Judge, suite_folder: Path, requests: list[tuple[str, dict[str, Any]]]) -> JudgeRun:
    """Ask the judge only the requests its cache does not answer, and append the new answers to the cache.
    A second call with the same requests asks nothing. ValidationError, nothing asked, when the cache
    file breaks a rule."""
    suite_folder = Path(suite_folder)
    path = cache_path(suite_folder, judge.name)
    problems = Problems()
    cache = read_cache(path, problems)
    problems.raise_if_any()
    run = JudgeRun(judge.name)
    missing: list[tuple[str, str, dict[str, Any]]] = []
    seen: set[str] = set()
    for question_id, request in requests:
        check_request(request)
        key = request_key(judge, question_id, request)
        if key in seen:
            continue
        seen.add(key)
        if key in cache:
            run.answers[key] = cache[key].answer
            run.cached += 1
        else:
            missing.append((key, question_id, request))
    run.requested = run.cached + len(missing)
    pending: list[dict[str, Any]] = []
    last_flush = time.monotonic()
    try:
        with closing(iter_judge(judge, suite_folder, [(q, r) for _, q, r in missing])) as results:
            for (key, question_id, request), result in zip(missing, results):
                if isinstance(result, Failure):
                    run.failed += 1
                    run.failures.append(JudgeFailure(question_id, request["sentence"], result.reason))
                    continue
                run.answered += 1
                run.answers[key] = result
                pending.append(cache_entry(judge, question_id, request, result))
                if len(pending) >= FLUSH_EVERY or time.monotonic() - last_flush >= FLUSH_SECONDS:
                    append_cache(path, pending)
                    pending, last_flush = [], time.monotonic()
    finally:
        append_cache(path, pending)
    return run


__all__ = [
    "JUDGEMENTS",
    "JUDGES_FILE",
    "PROMPT",
    "PROMPT_VERSION",
    "Answer",
    "CachedAnswer",
    "Failure",
    "Judge",
    "JudgeFailure",
    "JudgeRun",
    "append_cache",
    "cache_entry",
    "cache_path",
    "chat_body",
    "check_request",
    "declaration_hash",
    "iter_judge",
    "judge_missing",
    "judge_requests",
    "load_judges",
    "parse_answer",
    "read_cache",
    "request_key",
]
