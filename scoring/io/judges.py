"""Asking judges: programs or chat-completions servers that align answer sentences to a question's
expected claims. Their declarations and cached answers are files beside the suite
(`scoring.store.judges`); here they are asked, and new answers appended to the cache, so a re-run
asks nothing.

A request is ``{"question": str, "sentence": str, "citations": [str, ...], "claims": [{"id": str,
"proposition": str}, ...]}`` with the claims sorted by id; a judge declared with ``grades = true`` is
sent ``"documents": [{"id": str, "text": str}, ...]`` too, the cited documents in citation order (not
part of the cache key: the declaration is). An answer is ``{"claim_ids": [ids of the request's claims,
non-empty, no repeats] | "unlabelled" | "no_claim", "confidence": number in [0, 1] (optional),
"rationale": string (optional), "support": ["full" | "partial" | "none", one per citation] (optional),
"usage": {"prompt_tokens": int, "completion_tokens": int, "cost_usd": number} (optional, each key
optional)}`` and nothing else. An endpoint's own ``usage`` (``prompt_tokens``, ``completion_tokens``,
and ``cost`` where the server reports one) is read from its response. ragslice measures each answer's
latency. A judge that fails, times out or answers outside that schema leaves the sentence unaligned by
it (a `Failure`); it is never guessed.
"""
from __future__ import annotations

import json
import os
import re
import selectors
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import Problems
from ..store.files import MAX_LINE_BYTES, parse_json
from ..store.judges import (  # the judge files: declarations and cached answers, re-exported for callers
    JUDGEMENTS, JUDGES_FILE, PROMPT_VERSION, Answer, CachedAnswer, Judge, append_cache, cache_entry, cache_path,
    declaration_hash, grades_ok, load_judges, read_cache, read_repeats, repeat_entry, repeats_path, request_key,
    usage_ok, usage_rule,
)


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

GRADES_PROMPT = PROMPT.replace(
    "Judge only what the sentence says: not whether it is true, and not whether its citations support it.",
    "Align the sentence by what it says, not by whether it is true. The message also holds \"documents\": the \
text of each cited document, in citation order.").replace(
    'You may add "confidence"',
    'Also give "support": one grade per citation, in citation order: "full" when the document states \
everything the sentence says, "partial" when it states some of it (one of two clauses, say), "none" \
otherwise. You may add "confidence"')
"""The system prompt of an endpoint judge declared with ``grades = true``: the alignment, and a grade per citation."""

ANSWER_KEYS = ("claim_ids", "confidence", "rationale", "support", "usage")
ANSWER_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "cost_usd")
"""What a command judge may report of an answer's cost, under "usage"."""
STDERR_LINES = 5
"""How many of a failed judge program's last stderr lines its Failure quotes."""
FLUSH_EVERY = 100
FLUSH_SECONDS = 5.0
"""New answers are appended to the cache at least every FLUSH_EVERY answers or FLUSH_SECONDS seconds,
and when the run ends (also when it is interrupted)."""

_FENCE = re.compile(r"\A\s*```[A-Za-z]*[ \t]*\r?\n(.*?)\r?\n?[ \t]*```\s*\Z", re.DOTALL)


# --- requests and answers -----------------------------------------------------------------------


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
class Failure:
    """A judge that gave no usable answer to a request, and why; the sentence stays unaligned by it."""

    reason: str


def parse_answer(value: Any, claim_ids: Iterable[str], citations: int | None = None) -> Answer | Failure:
    """An answer checked against the answer schema and the request's claims (and, when `citations` is
    given, a `support` grade per citation); a Failure names the rule."""
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
    support = value.get("support")
    if support is not None and not grades_ok(support, citations):
        return Failure(f"answer field 'support': {_short(support)}: expected one grade per citation "
                       f"({citations if citations is not None else 'as many as cited'}), each \"full\", "
                       "\"partial\" or \"none\"")
    usage = value.get("usage") or {}
    if not isinstance(usage, dict) or any(k not in ANSWER_USAGE_KEYS for k in usage):
        return Failure(f"answer field 'usage': {_short(usage)}: expected an object of "
                       f"{', '.join(ANSWER_USAGE_KEYS)}")
    for name, amount in usage.items():
        if amount is not None and not usage_ok(name, amount):
            return Failure(f"answer field 'usage.{name}': {_short(amount)}: expected {usage_rule(name)}")
    return Answer(outcome, chosen, None if confidence is None else float(confidence), rationale,
                  None if support is None else tuple(support), usage.get("prompt_tokens"),
                  usage.get("completion_tokens"), usage.get("cost_usd"))


def _parse_answer_text(text: str, request: dict[str, Any]) -> Answer | Failure:
    try:
        value = parse_json(text, allow_nan=True)
    except ValueError as error:
        return Failure(f"the answer is not JSON ({getattr(error, 'msg', error)}): {_short(text)}")
    return parse_answer(value, [c["id"] for c in request["claims"]], len(request["citations"]))


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _short_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _seconds(value: float) -> str:
    return f"{value:g}"


def judge_requests(judge: Judge, suite_folder: Path, requests: list[tuple[str, dict[str, Any]]],
                   documents: dict[str, str] | None = None) -> list[Answer | Failure]:
    """Ask the judge each (question_id, request), in order: one Answer or Failure per request."""
    return list(iter_judge(judge, suite_folder, requests, documents))


def sent(judge: Judge, request: dict[str, Any], documents: dict[str, str] | None) -> dict[str, Any]:
    """What the judge is sent for a request: the request, and for a judge that grades support the cited
    documents' text (`documents`: doc ID -> text; an ID it lacks is sent with empty text)."""
    if not judge.grades:
        return request
    known = documents or {}
    return {**request, "documents": [{"id": d, "text": known.get(d, "")} for d in request["citations"]]}


def iter_judge(judge: Judge, suite_folder: Path, requests: list[tuple[str, dict[str, Any]]],
               documents: dict[str, str] | None = None) -> Iterator[Answer | Failure]:
    """`judge_requests`, yielding each result as soon as the judge gives it, with its latency measured."""
    for _, request in requests:
        check_request(request)
    if judge.command is not None:
        yield from _ask_command(judge, Path(suite_folder), [r for _, r in requests], documents)
    else:
        for _, request in requests:
            started = time.monotonic()
            found = _ask_endpoint(judge, request, documents)
            yield _timed(found, started)


def _timed(found: Answer | Failure, started: float) -> Answer | Failure:
    """An answer with the milliseconds since `started` as its latency."""
    if isinstance(found, Failure):
        return found
    return replace(found, latency_ms=round((time.monotonic() - started) * 1000, 3))


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


def _ask_command(judge: Judge, folder: Path, requests: list[dict[str, Any]],
                 documents: dict[str, str] | None = None) -> Iterator[Answer | Failure]:
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
            line = (json.dumps(sent(judge, request, documents), ensure_ascii=False) + "\n").encode("utf-8")
            started = time.monotonic()
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
            yield _timed(_parse_answer_text(text, request), started)
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


def chat_body(judge: Judge, request: dict[str, Any], documents: dict[str, str] | None = None) -> dict[str, Any]:
    """What an endpoint judge is sent for one request."""
    return {"model": judge.model,
            "messages": [{"role": "system", "content": GRADES_PROMPT if judge.grades else PROMPT},
                         {"role": "user", "content": json.dumps(sent(judge, request, documents), ensure_ascii=False)}],
            "temperature": 0}


def _usage(reply: dict[str, Any]) -> dict[str, Any]:
    """The tokens and cost an endpoint's response reports (`usage.prompt_tokens`, `completion_tokens`,
    `cost`), each None when absent or not a number >= 0."""
    usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
    reported = {"prompt_tokens": "prompt_tokens", "completion_tokens": "completion_tokens", "cost_usd": "cost"}
    return {name: usage.get(key) if usage_ok(name, usage.get(key)) else None for name, key in reported.items()}


def _ask_endpoint(judge: Judge, request: dict[str, Any], documents: dict[str, str] | None = None
                  ) -> Answer | Failure:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if judge.api_key_env is not None:
        key = os.environ.get(judge.api_key_env)
        if not key:
            return Failure(f"the environment variable {judge.api_key_env} (api_key_env) is not set or empty")
        headers["Authorization"] = f"Bearer {key}"
    data = json.dumps(chat_body(judge, request, documents), ensure_ascii=False).encode("utf-8")
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
    found = _parse_answer_text(fenced.group(1) if fenced else content, request)
    if isinstance(found, Failure):
        return found
    reported = {k: v for k, v in _usage(reply if isinstance(reply, dict) else {}).items() if v is not None}
    return replace(found, **reported)


# --- asking what the cache does not hold ---------------------------------------------------------


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


def judge_missing(judge: Judge, suite_folder: Path, requests: list[tuple[str, dict[str, Any]]],
                  documents: dict[str, str] | None = None) -> JudgeRun:
    """Ask the judge only the requests its cache does not answer, and append the new answers to the cache.
    A second call with the same requests asks nothing. ValidationError, nothing asked, when the cache
    file breaks a rule. `documents`: doc ID -> text, for a judge that grades support (`sent`)."""
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
        with closing(iter_judge(judge, suite_folder, [(q, r) for _, q, r in missing], documents)) as results:
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


@dataclass
class RepeatRun:
    """What `judge_again` did: the requests sampled, each asked `repeats` more times; per repeated answer
    (key, repeat, the cached answer, the new one), failures left out."""

    judge: str
    seed: int
    sampled: int = 0
    repeats: int = 0
    failed: int = 0
    pairs: list[tuple[str, int, Answer, Answer]] = field(default_factory=list)


def repeat_sample(keys: Iterable[str], sample: int, seed: int) -> list[str]:
    """The requests `judge_again` asks again: `sample` of the distinct keys (all when fewer), drawn without
    replacement by ``numpy.random.default_rng(seed)`` over the keys in sorted order, in sorted order."""
    import numpy as np

    ordered = sorted(set(keys))
    chosen = np.random.default_rng(seed).choice(len(ordered), min(sample, len(ordered)), replace=False)
    return [ordered[int(i)] for i in sorted(chosen)]


def judge_again(judge: Judge, suite_folder: Path, requests: list[tuple[str, dict[str, Any]]], *, repeats: int,
                sample: int, seed: int = 0, documents: dict[str, str] | None = None) -> RepeatRun:
    """Ask the judge again, `repeats` times each, a seeded sample of `sample` of the requests its cache
    answers (``numpy.random.default_rng(seed)``, without replacement, over the distinct requests in key
    order), and append every answer to its repeats file (`repeats_path`) with its repeat's number and the
    seed (`repeat_sample`). The cache is neither read for the answers nor written: a repeat measures the
    judge, it does not replace its answer. ValidationError, nothing asked, when the cache or repeats file
    breaks a rule."""
    from ..errors import invalid

    if type(repeats) is not int or repeats < 1:
        raise invalid("a whole number >= 1: how many times to ask each sampled request again", "--repeat", repeats)
    if type(sample) is not int or sample < 1:
        raise invalid("a whole number >= 1: how many requests to ask again", "--sample", sample)
    suite_folder = Path(suite_folder)
    problems = Problems()
    cache = read_cache(cache_path(suite_folder, judge.name), problems)
    read_repeats(repeats_path(suite_folder, judge.name), problems)
    problems.raise_if_any()
    answered: dict[str, tuple[str, dict[str, Any]]] = {}
    for question_id, request in requests:
        check_request(request)
        key = request_key(judge, question_id, request)
        if key in cache:
            answered.setdefault(key, (question_id, request))
    if not answered:
        raise invalid("the judge's cache answers none of these runs' sentences: run ragslice align without "
                      "--repeat first", "--repeat", repeats)
    picked = repeat_sample(answered, sample, seed)
    run = RepeatRun(judge.name, seed, sampled=len(picked))
    asked = [(key, n) for n in range(1, repeats + 1) for key in picked]
    lines: list[dict[str, Any]] = []
    try:
        with closing(iter_judge(judge, suite_folder, [answered[key] for key, _ in asked], documents)) as results:
            for (key, n), result in zip(asked, results):
                if isinstance(result, Failure):
                    run.failed += 1
                    continue
                run.repeats += 1
                run.pairs.append((key, n, cache[key].answer, result))
                question_id, request = answered[key]
                lines.append(repeat_entry(judge, question_id, request, result, n, seed))
    finally:
        append_cache(repeats_path(suite_folder, judge.name), lines)
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
    "RepeatRun",
    "append_cache",
    "cache_entry",
    "cache_path",
    "chat_body",
    "check_request",
    "declaration_hash",
    "iter_judge",
    "judge_again",
    "judge_missing",
    "judge_requests",
    "sent",
    "load_judges",
    "parse_answer",
    "read_cache",
    "read_repeats",
    "repeat_entry",
    "repeat_sample",
    "repeats_path",
    "request_key",
]
