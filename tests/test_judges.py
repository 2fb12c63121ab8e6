"""Judges: declarations checked, the cache key by its documented rule, the line protocol against real judge
programs, the chat-completions protocol against a real local HTTP server, and the cache that makes a
second run ask nothing."""
from __future__ import annotations

import hashlib
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import scoring.store.judges as judges_module
from scoring.errors import Problems, ValidationError
from scoring.io.judges import (
    PROMPT,
    Answer,
    Failure,
    Judge,
    append_cache,
    cache_path,
    judge_missing,
    judge_requests,
    load_judges,
    parse_answer,
    read_cache,
    request_key,
)

JUDGE_PROGRAM = r'''
import json, sys, time

mode = sys.argv[1]
log = open("calls.log", "a")  # relative: the judge runs in the suite folder
log.write("start\n")
log.flush()
for line in sys.stdin:
    request = json.loads(line)
    sentence = request["sentence"]
    log.write("ask " + sentence + "\n")
    log.flush()
    if mode == "malformed" and "BROKEN" in sentence:
        print("{not json", flush=True)
        continue
    if mode == "malformed" and "STRANGER" in sentence:
        print(json.dumps({"claim_ids": ["no-such-claim"]}), flush=True)
        continue
    if mode == "malformed" and "UNSURE" in sentence:
        print(json.dumps({"claim_ids": ["c1"], "confidence": 1.5}), flush=True)
        continue
    if mode == "slow" and "SLOW" in sentence:
        time.sleep(60)
    if mode == "crash" and "CRASH" in sentence:
        print("warming up", file=sys.stderr, flush=True)
        print("cannot parse the sentence", file=sys.stderr, flush=True)
        sys.exit(3)
    if mode == "crash" and "QUIT" in sentence:
        sys.exit(0)
    ids = sorted((c["id"] for c in request["claims"] if c["id"] in sentence), key=sentence.index)
    if ids:
        answer = {"claim_ids": ids, "confidence": 0.75, "rationale": "names " + " ".join(ids)}
    elif sentence.endswith(":"):
        answer = {"claim_ids": "no_claim"}
    else:
        answer = {"claim_ids": "unlabelled", "confidence": 0.5}
    print(json.dumps(answer), flush=True)
'''

CLAIMS = [{"id": "c1", "proposition": "Aurora owns the pager"}, {"id": "c2", "proposition": "since 2024"}]


def ask(sentence: str, question_id: str = "q-1", citations: list[str] | None = None) -> tuple[str, dict]:
    return question_id, {"question": "Who owns the pager?", "sentence": sentence,
                         "citations": ["d1"] if citations is None else citations, "claims": CLAIMS}


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    folder = tmp_path / "suites" / "demo"
    (folder / "judges").mkdir(parents=True)
    (folder / "judges" / "judge.py").write_text(JUDGE_PROGRAM)
    return folder


def program(mode: str, timeout: float = 2, name: str = "prog") -> Judge:
    return Judge(name=name, command=(sys.executable, "judges/judge.py", mode), timeout=timeout,
                 declaration_hash=hashlib.sha256(mode.encode()).hexdigest())


def calls(suite: Path) -> list[str]:
    log = suite / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


# --- declarations -----------------------------------------------------------------------------------------


def write_toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "judges.toml"
    path.write_text(text)
    return path


def test_declarations_load_in_order_with_their_hashes(tmp_path: Path):
    path = write_toml(tmp_path, '''
[judges.zeta]
command = ["python3", "judges/k.py"]
timeout = 10

[judges.alpha]
endpoint = "http://127.0.0.1:8000/v1/chat/completions"
model = "m"
api_key_env = "OPENAI_API_KEY"
''')
    judges = load_judges(path)
    assert list(judges) == ["zeta", "alpha"]  # declaration order is precedence, not alphabetical
    zeta, alpha = judges["zeta"], judges["alpha"]
    assert (zeta.command, zeta.endpoint, zeta.timeout) == (("python3", "judges/k.py"), None, 10)
    assert (alpha.endpoint, alpha.model, alpha.api_key_env, alpha.timeout, alpha.command) == (
        "http://127.0.0.1:8000/v1/chat/completions", "m", "OPENAI_API_KEY", 30, None)
    # canonical JSON of the table by hand: keys sorted, no spaces; an endpoint judge adds the prompt version
    assert zeta.declaration_hash == hashlib.sha256(b'{"command":["python3","judges/k.py"],"timeout":10}').hexdigest()
    assert alpha.declaration_hash == hashlib.sha256(
        b'{"api_key_env":"OPENAI_API_KEY","endpoint":"http://127.0.0.1:8000/v1/chat/completions","model":"m"}'
        b"\nalign-v1").hexdigest()


def test_a_changed_declaration_changes_every_key(tmp_path: Path):
    before = load_judges(write_toml(tmp_path, '[judges.k]\ncommand = ["python3", "judges/k.py"]\n'))["k"]
    after = load_judges(write_toml(tmp_path, '[judges.k]\ncommand = ["python3", "judges/k2.py"]\n'))["k"]
    q, request = ask("Aurora owns it.")
    assert request_key(before, q, request) != request_key(after, q, request)


BAD_DECLARATIONS = [
    ('[judges.both]\ncommand = ["x"]\nendpoint = "http://h/v1"\nmodel = "m"\n', 1, "both", None,
     "exactly one of command"),
    ("[judges.none]\ntimeout = 5\n", 1, "none", None, "exactly one of command"),
    ("[judges.k]\ncommand = []\n", 2, "k", "command", "non-empty list of strings"),
    ('[judges.k]\ncommand = "python3 judge.py"\n', 2, "k", "command", "non-empty list of strings"),
    ('[judges.k]\ncommand = ["python3", 3]\n', 2, "k", "command", "non-empty list of strings"),
    ('[judges.e]\nendpoint = "ftp://h/v1"\nmodel = "m"\n', 2, "e", "endpoint", "http:// or https:// URL"),
    ('[judges.e]\nendpoint = "http://h/v1"\n', 1, "e", "model", "names its model"),
    ('[judges.e]\nendpoint = "http://h/v1"\nmodel = 7\n', 3, "e", "model", "names its model"),
    ('[judges.k]\ncommand = ["x"]\ntimeout = 0\n', 3, "k", "timeout", "greater than 0 and at most 600"),
    ('[judges.k]\ncommand = ["x"]\ntimeout = 601\n', 3, "k", "timeout", "greater than 0 and at most 600"),
    ('[judges.k]\ncommand = ["x"]\ntimeout = "10"\n', 3, "k", "timeout", "greater than 0 and at most 600"),
    ('[judges.k]\ncommand = ["x"]\ntimeout = true\n', 3, "k", "timeout", "greater than 0 and at most 600"),
    ('[judges.k]\ncommand = ["x"]\nmodel = "m"\n', 3, "k", "model", "unknown key for a command judge"),
    ('[judges.e]\nendpoint = "http://h/v1"\nmodel = "m"\nmodle = "m"\n', 4, "e", "modle", "unknown key for an endpoint judge"),
    ('[judges."two words"]\ncommand = ["x"]\n', 1, '"two words"', None, "a judge name is 1-64 of letters"),
    ('[judges.e]\nendpoint = "http://h/v1"\nmodel = "m"\napi_key_env = "sk-live-123"\n', 4, "e", "api_key_env",
     "never the key itself"),
    ('name = "x"\n[judges.k]\ncommand = ["x"]\n', 1, None, "name", "holds only [judges.<name>] tables"),
    ("# nothing declared\n", None, None, "judges", "declares at least one judge"),
    ("[judges.k]\ncommand = [\n", None, None, None, "not valid TOML"),
]


@pytest.mark.parametrize(("text", "line", "judge", "field", "rule"), BAD_DECLARATIONS)
def test_bad_declarations_are_refused_with_file_judge_field_and_rule(tmp_path, text, line, judge, field, rule):
    path = write_toml(tmp_path, text)
    with pytest.raises(ValidationError) as caught:
        load_judges(path)
    message = str(caught.value)
    assert len(caught.value.problems) == 1, message
    assert message.startswith(f"{path}:{line}: " if line else f"{path}")
    assert rule in message
    if judge is not None:  # the judge and its key as a TOML path: judges.<name>.<key>
        assert f"field {'judges.' + judge + ('.' + field if field else '')!r}" in message
    elif field is not None:
        assert f"field {field!r}" in message


def test_a_key_in_api_key_env_is_never_echoed(tmp_path: Path):
    path = write_toml(tmp_path, '[judges.e]\nendpoint = "http://h/v1"\nmodel = "m"\napi_key_env = "sk-live-123"\n')
    with pytest.raises(ValidationError) as caught:
        load_judges(path)
    assert "sk-live-123" not in str(caught.value)


def test_every_problem_of_a_declaration_file_is_reported_at_once(tmp_path: Path):
    path = write_toml(tmp_path, '[judges.a]\ncommand = []\ntimeout = -1\n\n[judges.b]\nendpoint = "nope"\n')
    with pytest.raises(ValidationError) as caught:
        load_judges(path)
    shown = [str(p) for p in caught.value.problems]
    assert [s.split(": ", 1)[0] for s in shown] == [f"{path}:2", f"{path}:3", f"{path}:5", f"{path}:6"]


# --- the key ---------------------------------------------------------------------------------------------


def test_request_key_follows_the_documented_string():
    judge = Judge(name="k", command=("x",), declaration_hash="abc123")
    request = {"question": "Who owns the pager?", "sentence": "Aurora owns it — since 2024.",
               "citations": ["d1", "d2#3"], "claims": CLAIMS}
    text = ("abc123\nq-1\nWho owns the pager?\nAurora owns it — since 2024.\nd1\td2#3\n"
            "c1\tAurora owns the pager\nc2\tsince 2024")
    assert request_key(judge, "q-1", request) == hashlib.sha256(text.encode("utf-8")).hexdigest()
    no_citations = {**request, "citations": []}
    text = "abc123\nq-1\nWho owns the pager?\nAurora owns it — since 2024.\n\nc1\tAurora owns the pager\nc2\tsince 2024"
    assert request_key(judge, "q-1", no_citations) == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_requests_with_unsorted_claims_are_refused(suite: Path):
    q, request = ask("c1")
    with pytest.raises(ValueError, match="sorted by id"):
        judge_requests(program("good"), suite, [(q, {**request, "claims": CLAIMS[::-1]})])


# --- command judges --------------------------------------------------------------------------------------


def test_a_program_judge_answers_every_request_in_order_from_one_process(suite: Path):
    results = judge_requests(program("good"), suite, [ask("c2 holds, and so does c1."), ask("Here is what I found:"),
                                                      ask("The sky is blue."), ask("c1 only.")])
    assert results == [
        Answer("claims", ("c1", "c2"), 0.75, "names c2 c1"),  # sorted, whatever order the judge gave
        Answer("no_claim"),
        Answer("unlabelled", (), 0.5),
        Answer("claims", ("c1",), 0.75, "names c1"),
    ]
    assert calls(suite) == ["start", "ask c2 holds, and so does c1.", "ask Here is what I found:",
                            "ask The sky is blue.", "ask c1 only."]


def test_a_malformed_answer_fails_that_request_only(suite: Path):
    results = judge_requests(program("malformed"), suite,
                             [ask("c1 first."), ask("BROKEN c1"), ask("STRANGER c2"), ask("UNSURE c1"), ask("c2 last.")])
    assert results[0] == Answer("claims", ("c1",), 0.75, "names c1")
    assert isinstance(results[1], Failure) and "the answer is not JSON" in results[1].reason
    assert results[2] == Failure(
        "answer field 'claim_ids': 'no-such-claim' is not a claim of the request (its claims: c1, c2)")
    assert results[3] == Failure("answer field 'confidence': 1.5: expected a number from 0 to 1")
    assert results[4] == Answer("claims", ("c2",), 0.75, "names c2")
    assert calls(suite).count("start") == 1  # the process kept going


@pytest.mark.parametrize(("answer", "expected"), [
    ({"claim_ids": ["c2", "c1"], "confidence": 0, "rationale": "both"}, Answer("claims", ("c1", "c2"), 0.0, "both")),
    ({"claim_ids": "no_claim", "confidence": None}, Answer("no_claim")),
    ({"claim_ids": []}, "answer field 'claim_ids': []: expected a non-empty list"),
    ({"claim_ids": ["c1", "c1"]}, "answer field 'claim_ids': ['c1', 'c1'] names a claim twice"),
    ({"claim_ids": "none"}, "answer field 'claim_ids': 'none': expected a non-empty list"),
    ({"confidence": 1}, "answer field 'claim_ids': required"),
    ({"claim_ids": ["c1"], "confidence": True}, "answer field 'confidence': True: expected a number from 0 to 1"),
    ({"claim_ids": ["c1"], "confidence": -0.1}, "answer field 'confidence': -0.1: expected a number from 0 to 1"),
    ({"claim_ids": ["c1"], "rationale": 3}, "answer field 'rationale': 3: expected a string"),
    (["c1"], "the answer is not a JSON object: ['c1']"),
])
def test_the_answer_schema(answer, expected):
    result = parse_answer(answer, ["c1", "c2"])
    if isinstance(expected, Answer):
        assert result == expected
    else:
        assert isinstance(result, Failure) and result.reason.startswith(expected), result


def test_a_judge_past_its_timeout_is_killed_and_a_fresh_one_takes_the_rest(suite: Path):
    results = judge_requests(program("slow", timeout=1), suite, [ask("c1 first."), ask("SLOW c1"), ask("c2 last.")])
    assert results == [Answer("claims", ("c1",), 0.75, "names c1"), Failure("timed out after 1 s"),
                       Answer("claims", ("c2",), 0.75, "names c2")]
    assert calls(suite) == ["start", "ask c1 first.", "ask SLOW c1", "start", "ask c2 last."]


def test_a_judge_that_exits_fails_that_request_with_its_code_and_stderr(suite: Path):
    results = judge_requests(program("crash"), suite,
                             [ask("c1 first."), ask("CRASH c1"), ask("c2 then."), ask("QUIT"), ask("c1 last.")])
    assert results[0] == Answer("claims", ("c1",), 0.75, "names c1")
    assert results[1] == Failure("the judge ended before answering (exit code 3); its stderr ended with: "
                                 "warming up | cannot parse the sentence")
    assert results[2] == Answer("claims", ("c2",), 0.75, "names c2")
    assert results[3] == Failure("the judge ended before answering (exit code 0)")
    assert results[4] == Answer("claims", ("c1",), 0.75, "names c1")
    assert calls(suite).count("start") == 3


def test_a_judge_that_cannot_start_fails_every_request(suite: Path):
    judge = Judge(name="gone", command=("./no-such-judge",), declaration_hash="x")
    results = judge_requests(judge, suite, [ask("c1"), ask("c2")])
    assert [type(r) for r in results] == [Failure, Failure]
    assert "cannot start the judge ['./no-such-judge']" in results[0].reason


# --- endpoint judges -------------------------------------------------------------------------------------


class ChatServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), ChatHandler)
        self.received: list[tuple[str | None, dict]] = []
        self.release = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1/chat/completions"


class ChatHandler(BaseHTTPRequestHandler):
    server: ChatServer

    def log_message(self, *args) -> None:
        pass

    def reply(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        auth = self.headers.get("Authorization")
        self.server.received.append((auth, body))
        if auth != "Bearer s3cret":
            return self.reply(401, b'{"error": "invalid api key"}')
        sentence = json.loads(body["messages"][1]["content"])["sentence"]
        if "SLOW" in sentence:
            self.server.release.wait(10)
        if "HTTP500" in sentence:
            return self.reply(500, b'{"error": "overloaded"}')
        if "NOTJSON" in sentence:
            return self.reply(200, b"<html>gateway</html>")
        if "BROKEN" in sentence:
            content = "I think it is c1."
        elif "EXTRA" in sentence:
            content = json.dumps({"claim_ids": ["c1"], "verdict": "yes"})
        elif "FENCE" in sentence:
            content = '```json\n{"claim_ids": ["c2", "c1"], "confidence": 1}\n```'
        elif "c1" in sentence:
            content = json.dumps({"claim_ids": ["c1"], "confidence": 0.25, "rationale": "states c1"})
        else:
            content = json.dumps({"claim_ids": "unlabelled"})
        reply = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
        return self.reply(200, json.dumps(reply).encode())


@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch):
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    server = ChatServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()
        thread.join()


def endpoint(server: ChatServer, timeout: float = 2, key_env: str | None = "JUDGE_TEST_KEY") -> Judge:
    return Judge(name="mini", endpoint=server.url, model="tiny-model", api_key_env=key_env, timeout=timeout,
                 declaration_hash="h")


def test_an_endpoint_judge_is_sent_the_prompt_and_the_request_with_the_key(chat: ChatServer, suite: Path,
                                                                          monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("JUDGE_TEST_KEY", "s3cret")
    requests = [ask("c1 it is."), ask("Something else."), ask("FENCE both")]
    results = judge_requests(endpoint(chat), suite, requests)
    assert results == [Answer("claims", ("c1",), 0.25, "states c1"), Answer("unlabelled"),
                       Answer("claims", ("c1", "c2"), 1.0)]
    auth, body = chat.received[0]
    assert auth == "Bearer s3cret"
    assert body["model"] == "tiny-model" and body["temperature"] == 0
    assert body["messages"][0] == {"role": "system", "content": PROMPT}
    assert body["messages"][1]["role"] == "user"
    assert json.loads(body["messages"][1]["content"]) == requests[0][1]


def test_endpoint_failures_are_failures_never_guesses(chat: ChatServer, suite: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("JUDGE_TEST_KEY", "s3cret")
    results = judge_requests(endpoint(chat, timeout=1), suite,
                             [ask("BROKEN c1"), ask("EXTRA c1"), ask("HTTP500 c1"), ask("NOTJSON c1"),
                              ask("SLOW c1"), ask("c1 after all that.")])
    assert isinstance(results[0], Failure) and results[0].reason.startswith("the answer is not JSON")
    assert results[1] == Failure("answer field 'verdict': unknown field (an answer has claim_ids, confidence, rationale, "
                                 "support, usage)")
    assert results[2] == Failure("the endpoint answered HTTP 500: '{\"error\": \"overloaded\"}'")
    assert isinstance(results[3], Failure) and results[3].reason.startswith("the endpoint's response is not JSON")
    assert results[4] == Failure("timed out after 1 s")
    assert results[5] == Answer("claims", ("c1",), 0.25, "states c1")


def test_a_wrong_or_missing_key(chat: ChatServer, suite: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("JUDGE_TEST_KEY", "wrong")
    [wrong] = judge_requests(endpoint(chat), suite, [ask("c1")])
    assert isinstance(wrong, Failure) and wrong.reason.startswith("the endpoint answered HTTP 401")
    monkeypatch.delenv("JUDGE_TEST_KEY")
    [missing] = judge_requests(endpoint(chat), suite, [ask("c1")])
    assert missing == Failure("the environment variable JUDGE_TEST_KEY (api_key_env) is not set or empty")
    assert len(chat.received) == 1  # the missing key asked nothing
    [anonymous] = judge_requests(endpoint(chat, key_env=None), suite, [ask("c1")])
    assert chat.received[-1][0] is None and isinstance(anonymous, Failure)


# --- the cache -------------------------------------------------------------------------------------------


def test_cached_answers_make_a_second_run_ask_nothing(suite: Path):
    judge = program("good")
    requests = [ask("c1 it is."), ask("Here is what I found:"), ask("c1 it is."), ask("c1 it is.", "q-2")]
    first = judge_missing(judge, suite, requests)
    # the same sentence for the same question is one request: 3 distinct of 4
    assert (first.requested, first.cached, first.answered, first.failed) == (3, 0, 3, 0)
    assert calls(suite) == ["start", "ask c1 it is.", "ask Here is what I found:", "ask c1 it is."]
    lines = [json.loads(line) for line in cache_path(suite, "prog").read_text().splitlines()]
    assert [line["key"] for line in lines] == [request_key(judge, q, r) for q, r in (requests[0], requests[1], requests[3])]
    assert {k: v for k, v in lines[0].items() if k not in ("at", "latency_ms")} == {
        "key": request_key(judge, *requests[0]), "judge": "prog", "question_id": "q-1", "sentence": "c1 it is.",
        "citations": ["d1"], "claim_ids": ["c1"], "confidence": 0.75, "rationale": "names c1"}
    # the latency ragslice measured from request to answer; the program reported no tokens or cost
    assert all(0 < line["latency_ms"] < 10_000 for line in lines) and "cost_usd" not in lines[0]
    assert lines[1]["claim_ids"] == "no_claim" and lines[1]["confidence"] is None
    second = judge_missing(judge, suite, requests)
    assert (second.requested, second.cached, second.answered, second.failed) == (3, 3, 0, 0)
    assert len(calls(suite)) == 4  # no process started, nothing asked
    assert second.answers[request_key(judge, *requests[0])] == Answer("claims", ("c1",), 0.75, "names c1")
    assert second.answers == first.answers
    assert len(cache_path(suite, "prog").read_text().splitlines()) == 3


def test_failures_are_reported_and_asked_again_next_time(suite: Path):
    judge = program("crash")
    requests = [ask("c1 first."), ask("CRASH c2"), ask("c2 last.")]
    first = judge_missing(judge, suite, requests)
    assert (first.requested, first.cached, first.answered, first.failed) == (3, 0, 2, 1)
    [failure] = first.failures
    assert (failure.question_id, failure.sentence) == ("q-1", "CRASH c2")
    assert "exit code 3" in failure.reason
    second = judge_missing(judge, suite, requests)
    assert (second.requested, second.cached, second.answered, second.failed) == (3, 2, 0, 1)
    assert calls(suite)[-2:] == ["start", "ask CRASH c2"]


def test_read_cache_checks_every_line_with_file_and_line(tmp_path: Path):
    path = tmp_path / "judgements" / "prog.jsonl"
    good = {"key": "a" * 64, "judge": "prog", "question_id": "q-1", "sentence": "c1.", "citations": ["d1"],
            "claim_ids": ["c1"], "confidence": None, "rationale": None, "at": "2026-12-01T09:30:00.123Z"}
    path.parent.mkdir()
    path.write_text("\n".join([
        json.dumps(good),
        json.dumps({**good, "key": "b" * 64, "confidence": 2, "verdict": "x"}),
        "{not json",
        json.dumps({**good, "key": "c" * 64, "judge": "other", "claim_ids": []}),
        json.dumps({**good, "claim_ids": "unlabelled", "at": "2026-12-02T09:30:00Z"}),
    ]) + "\n")
    problems = Problems()
    cached = read_cache(path, problems)
    shown = [str(p) for p in problems.items]
    assert shown == [
        (f"{path}:2: question 'q-1': field 'verdict': unknown field (a judgement has key, judge, question_id, "
         "sentence, citations, claim_ids, confidence, rationale, at, support, prompt_tokens, completion_tokens, "
         "cost_usd, latency_ms; prefix extensions with x_)"),
        f"{path}:2: question 'q-1': field 'confidence': 2: expected a number from 0 to 1, or null",
        f"{path}:3: not valid JSON (Expecting property name enclosed in double quotes)",
        f"{path}:4: question 'q-1': field 'judge': 'other' must equal the file's judge 'prog' (one file per judge)",
        (f"{path}:4: question 'q-1': field 'claim_ids': []: expected a non-empty list of claim IDs, \"unlabelled\" or "
         "\"no_claim\""),
    ]
    assert list(cached) == ["a" * 64]
    assert cached["a" * 64].answer == Answer("unlabelled") and cached["a" * 64].line == 5  # the last line wins


def test_a_broken_cache_stops_the_run_before_anything_is_asked(suite: Path):
    path = cache_path(suite, "prog")
    path.parent.mkdir()
    path.write_text('{"key": "short"}\n')
    with pytest.raises(ValidationError) as caught:
        judge_missing(program("good"), suite, [ask("c1")])
    assert f"{path}:1: field 'key'" in str(caught.value)
    assert calls(suite) == []


def test_append_cache_starts_a_new_line_after_a_cut_one(tmp_path: Path):
    path = tmp_path / "judgements" / "prog.jsonl"
    path.parent.mkdir()
    path.write_text('{"key": "a", "cut sh')
    append_cache(path, [{"key": "b"}, {"key": "c"}])
    assert path.read_text().splitlines() == ['{"key": "a", "cut sh', '{"key": "b"}', '{"key": "c"}']


# --- the documentation -----------------------------------------------------------------------------------

FORMATS = Path(__file__).resolve().parents[1] / "docs" / "formats.md"
KEY_RULE = ('"\\n".join([judge.declaration_hash, question_id, request["question"], request["sentence"], '
            '"\\t".join(request["citations"]), "\\n".join(c["id"] + "\\t" + c["proposition"] for c in request["claims"])])')


def test_the_documented_prompt_and_key_rule_are_the_code_s():
    text = FORMATS.read_text(encoding="utf-8")
    judges_section = text.split("\n## Judges\n", 1)[1]
    assert judges_section.split("is the system message:\n\n```\n", 1)[1].split("\n```\n", 1)[0] == PROMPT
    assert KEY_RULE in judges_section
    assert KEY_RULE in judges_module.__doc__


def test_the_documented_minimal_program_judge_works(suite: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)  # the example must flush each answer itself
    text = FORMATS.read_text(encoding="utf-8")
    source = text.split("A minimal program judge:\n\n```python\n", 1)[1].split("```", 1)[0]
    (suite / "judges" / "minimal.py").write_text(source)
    judge = Judge(name="minimal", command=(sys.executable, "judges/minimal.py"), timeout=2, declaration_hash="m")
    claims = [{"id": "pager-owner", "proposition": "The Aurora team owns the pager."},
              {"id": "since-2024", "proposition": "Since 2024."}]
    requests = [("q-1", {"question": "Who?", "sentence": sentence, "citations": [], "claims": claims})
                for sentence in ("The Aurora team owns the pager.", "Nothing here.")]
    assert judge_requests(judge, suite, requests) == [Answer("claims", ("pager-owner",)), Answer("unlabelled")]
