"""The free-text run (`TEXT_RUN`): production's answers written as sentences, the suite's judge program
and its cached answers, and a reviewed sample of the sentences. The judge and its declaration are the
files ``files/checker.py`` and ``files/judges.toml``, written to the suite as they are."""
from __future__ import annotations

import random
import tomllib

from scoring.io.judges import (Answer, Judge, cache_entry, declaration_hash, parse_answer, repeat_entry,
                               repeat_sample, request_key, sent)
from scoring.metrics.reference import normalise_sentence, resolve_citations

from .model import MAX_CLAIMS, SEED, Question
from .prose import prose, verbatim
from .runs import TEXT_RUN
from .world import World

JUDGE_NAME = "checker"
JUDGES_TOML = verbatim("judges.toml")
"""The suite's judges.toml: it declares the judge `JUDGE_NAME`."""
JUDGE_SCRIPT = verbatim("checker.py")
"""The judge's program, written to the suite's judges/checker.py and run here to fill its cache."""
JUDGE_DECLARATION = tomllib.loads(JUDGES_TOML)["judges"][JUDGE_NAME]


def free_text_records(world: World, questions: list[Question], runs: dict[str, list[dict[str, object]]]
                      ) -> list[dict[str, object]]:
    """`TEXT_RUN`'s records: prod-baseline's, each answer as sentences citing indexes into `retrieved` (an ID
    when the cited document is not retrieved); an abstention or a hedge is one sentence citing nothing, and
    some answers open with the preamble of ``prose/answers.toml``."""
    rng = random.Random(f"{SEED}/{TEXT_RUN.run_id}")
    preamble = prose("answers")["preamble"]
    out = []
    for record in runs["prod-baseline"]:
        ranking = list(record["retrieved"])
        claims = list(record["claims"])
        if record["error"]:
            sentences: list[dict[str, object]] = []
        elif not claims:
            sentences = [{"text": str(record["answer"]), "citations": []}]
        else:
            sentences = [{"text": str(c["text"]), "citations": [ranking.index(d) if d in ranking else d
                                                                 for d in c["citations"]]} for c in claims]
            if len(sentences) < MAX_CLAIMS and rng.random() < 0.3:
                sentences.insert(0, {"text": preamble, "citations": []})
        latency = record["latency_ms"]
        out.append({"question_id": record["question_id"], "retrieved": ranking, "context": record["context"],
                    "answer": " ".join(str(x["text"]) for x in sentences) if sentences else "",
                    "answer_sentences": sentences, "latency_ms": latency, "cost_usd": record["cost_usd"],
                    "error": record["error"]})
    return out


def _truth(q: Question, source_record: dict[str, object], sentence: dict[str, object]) -> list[str] | str:
    """What a reviewer decides for a sentence of `free_text_records`: the expected claim its source claim
    was, else `unlabelled` (a superseded value, an extra step), or `no_claim` (the preamble, a refusal)."""
    if not sentence["citations"]:
        return "no_claim"
    source = next(c for c in source_record["claims"] if c["text"] == sentence["text"])
    return [str(source["id"])] if source["id"] in q.claims else "unlabelled"


def _requests(world: World, questions: list[Question], records: list[dict[str, object]]
              ) -> list[tuple[str, dict[str, object]]]:
    by_id = {q.id: q for q in questions}
    out = []
    for record in records:
        q = by_id[str(record["question_id"])]
        claims = [{"id": c, "proposition": text} for c, (text, _) in sorted(q.claims.items())]
        for sentence in record["answer_sentences"]:
            out.append((q.id, {"question": q.text, "sentence": normalise_sentence(str(sentence["text"])),
                               "citations": list(resolve_citations(sentence["citations"], record["retrieved"])),
                               "claims": claims}))
    return out


def _judge() -> Judge:
    return Judge(JUDGE_NAME, command=tuple(JUDGE_DECLARATION["command"]), timeout=JUDGE_DECLARATION["timeout"],
                 declaration_hash=declaration_hash(JUDGE_DECLARATION), grades=bool(JUDGE_DECLARATION.get("grades")))


def _ask(world: World, request: dict[str, object]) -> Answer:
    """The judge's own `answer` to a request (the very program the demo ships, run in this process), sent the
    cited documents' text as `ragslice align` sends them."""
    program: dict[str, object] = {}
    exec(compile(JUDGE_SCRIPT, "checker.py", "exec"), program)
    texts = {d: world.docs[d].text for d in request["citations"] if d in world.docs}
    found = parse_answer(program["answer"](sent(_judge(), request, texts)), [c["id"] for c in request["claims"]],
                         len(request["citations"]))
    assert isinstance(found, Answer), found
    return found


def _distinct(world: World, questions: list[Question], records: list[dict[str, object]]
              ) -> list[tuple[str, dict[str, object]]]:
    """One (question, request) per distinct request, in the order the sentences come."""
    out, seen = [], set()
    for question_id, request in _requests(world, questions, records):
        entry_key = (question_id, request["sentence"], tuple(request["citations"]))
        if entry_key not in seen:
            seen.add(entry_key)
            out.append((question_id, request))
    return out


def judge_cache(world: World, questions: list[Question], records: list[dict[str, object]]) -> list[dict[str, object]]:
    """The judge's cached answers to every sentence of the free-text run, as `ragslice align` writes them (one
    line per distinct request, at a fixed time; no latency: the program ran in this process)."""
    judge = _judge()
    return [cache_entry(judge, question_id, request, _ask(world, request),
                        at=f"2026-11-08T10:{n // 60 % 60:02d}:{n % 60:02d}Z")
            for n, (question_id, request) in enumerate(_distinct(world, questions, records))]


REPEAT_SAMPLE = 40
REPEATS = 3
REPEAT_SEED = 11


def judge_repeats(world: World, questions: list[Question], records: list[dict[str, object]]) -> list[dict[str, object]]:
    """The judge asked again, as `ragslice align data/demo --runs prod-text --judge checker --repeat 3 --sample 40
    --seed 11` asks it (`judges.repeat_sample`): each answer with its repeat's number and the seed, at a fixed
    time. The program is deterministic, so it agrees with itself every time."""
    judge = _judge()
    by_key = {request_key(judge, q, r): (q, r) for q, r in _distinct(world, questions, records)}
    lines = []
    for n in range(1, REPEATS + 1):
        for i, key in enumerate(repeat_sample(by_key, REPEAT_SAMPLE, REPEAT_SEED)):
            question_id, request = by_key[key]
            lines.append(repeat_entry(judge, question_id, request, _ask(world, request), n, REPEAT_SEED,
                                      at=f"2026-11-09T1{n}:{i // 60:02d}:{i % 60:02d}Z"))
    return lines


def alignment_reviews(questions: list[Question], runs: dict[str, list[dict[str, object]]]
                      ) -> dict[str, list[dict[str, object]]]:
    """A reviewed sample of the free-text run's sentences, split between amara and kofi: every sentence that
    states a superseded or staging value (the misalignments token overlap makes), eight refusals, six
    preambles, six extra steps and twelve plain claims, in answer order."""
    by_id = {q.id: q for q in questions}
    sources = {r["question_id"]: r for r in runs["prod-baseline"]}
    wanted = {"wrong": 99, "refusal": 8, "preamble": 6, "extra": 6, "plain": 12}
    preamble = prose("answers")["preamble"]
    chosen: list[tuple[str, str, list[str] | str]] = []
    seen: set[tuple[str, str]] = set()
    for record in runs[TEXT_RUN.run_id]:
        q, source = by_id[str(record["question_id"])], sources[record["question_id"]]
        for sentence in record["answer_sentences"]:
            text = str(sentence["text"])
            truth = _truth(q, source, sentence)
            kind = ("preamble" if text == preamble else "refusal" if truth == "no_claim"
                    else "plain" if isinstance(truth, list) else
                    "extra" if any(str(c["id"]).startswith("extra-") and c["text"] == text for c in source["claims"])
                    else "wrong")
            if wanted[kind] and (q.id, text) not in seen:
                wanted[kind] -= 1
                seen.add((q.id, text))
                chosen.append((q.id, text, truth))
    out: dict[str, list[dict[str, object]]] = {"amara": [], "kofi": []}
    for n, (question_id, text, truth) in enumerate(chosen):
        reviewer = "amara" if n % 2 == 0 else "kofi"
        out[reviewer].append({"at": f"2026-11-10T{9 + n // 60:02d}:{n % 60:02d}:00Z", "reviewer": reviewer,
                              "kind": "alignment", "question_id": question_id, "sentence": text, "claim_ids": truth})
    return out


SAMPLE_NAME = "prod-text-support"
SAMPLE_SIZE = 100
SAMPLE_SEED = 7
SAMPLE_STRATA = ("type", "answerable")
SAMPLE_REVIEWED = 60
"""The sample's items reviewed, in queue order (more when a stratum has fewer than two reviewed by then)."""


def review_sample(questions: list[Question], runs: dict[str, list[dict[str, object]]]):
    """A seeded sample of the free-text run's sentences resting on the judge (every sentence amara and kofi
    did not align), drawn as `ragslice sample --size 100 --strata type,answerable --seed 7` draws it, and the
    reviews of its first items in queue order, marked with the sample, split between amara and kofi."""
    from scoring.store.samples import MIN_PER_STRATUM, draw_from_frame

    by_id = {q.id: q for q in questions}
    sources = {r["question_id"]: r for r in runs["prod-baseline"]}
    reviewed = {(str(r["question_id"]), normalise_sentence(str(r["sentence"])))
                for rows in alignment_reviews(questions, runs).values() for r in rows}
    frame = []
    for record in sorted(runs[TEXT_RUN.run_id], key=lambda r: str(r["question_id"])):
        q = by_id[str(record["question_id"])]
        for n, sentence in enumerate(record["answer_sentences"]):
            if (q.id, normalise_sentence(str(sentence["text"]))) in reviewed:
                continue
            frame.append({"run_id": TEXT_RUN.run_id, "question_id": q.id, "sentence": n, "text": str(sentence["text"]),
                          "doc_id": None, "type": q.type, "answerable": any(g > 0 for g in q.grades.values())})
    sample = draw_from_frame(frame, [TEXT_RUN.run_id], unit="sentence", size=SAMPLE_SIZE, strata=SAMPLE_STRATA,
                             seed=SAMPLE_SEED, name=SAMPLE_NAME, drawn_at="2026-11-12T09:00:00Z")
    records = {str(r["question_id"]): r for r in runs[TEXT_RUN.run_id]}
    out: dict[str, list[dict[str, object]]] = {"amara": [], "kofi": []}
    done: dict[str, int] = {}
    seen: set[tuple[str, str]] = set()
    for n, item in enumerate(sample.items):
        short = [s for s in {i.stratum for i in sample.items} if done.get(s, 0) < min(MIN_PER_STRATUM, item.drawn)]
        if n >= SAMPLE_REVIEWED and not short:
            break
        if n >= SAMPLE_REVIEWED and item.stratum not in short:
            continue
        key = (item.question_id, normalise_sentence(str(item.text)))
        done[item.stratum] = done.get(item.stratum, 0) + 1
        if key in seen:
            continue
        seen.add(key)
        q = by_id[item.question_id]
        sentence = records[item.question_id]["answer_sentences"][int(item.sentence)]
        reviewer = "amara" if n % 2 == 0 else "kofi"
        out[reviewer].append({"at": f"2026-11-12T{10 + n // 60:02d}:{n % 60:02d}:00Z", "reviewer": reviewer,
                              "kind": "alignment", "question_id": item.question_id, "sentence": str(item.text),
                              "claim_ids": _truth(q, sources[item.question_id], sentence), "sample": SAMPLE_NAME})
    return sample, out
