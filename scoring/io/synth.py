"""`ragslice synth`: a synthetic workspace of any size, in the normal formats (docs/formats.md).

One suite `synth` and `runs x repeats` runs of it. The content is made up but shaped like a real
test set, so that refreshes, benchmarks and dashboards see realistic volumes and mixes:

- corpus: 10 documents per question, at most 100,000, each a few hundred characters of text;
  documents come in clusters of 10 (a topic), some carry access groups, outdated ones an older
  version;
- questions: every type in fixed proportions (lookup 3/10, multi-evidence 2/10, and 1/10 each of
  near-duplicate, outdated, conflicting, unanswerable, permission), graded labels (2, 1, and 0 for
  judged non-relevant look-alikes), one to three expected claims with supporting documents, about
  70% dev and 30% heldout, every tenth critical, a caller on permission questions;
- records: 20 retrieved documents (the labelled ones at ranks that depend on the run's quality,
  the rest drawn from other topics), up to 3 claims with citations (right, wrong or unlabelled),
  answer, context, latency and cost; about 1% of the questions of each run have no record
  (missing) and 1% a failed request (`error`).

Every ID also satisfies the seed's stricter rule, so the same data can be scored by
`scoring.evaluate`. The output is a pure function of (questions, runs, repeats, seed): two
generations are byte-identical. Records are assembled from precomputed JSON fragments (no
per-record `json.dumps`) and runs are written in parallel processes when there are many records.
"""
from __future__ import annotations

import json
import os
import random
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..errors import invalid

SUITE = "synth"
SUITE_VERSION = "1"
RUBRIC_VERSION = "synth-rubric-1"
CLUSTER = 10
"""Documents per topic cluster; question q's labelled documents live in its cluster."""
MAX_DOCUMENTS = 100_000
MIN_DOCUMENTS = 200
RANKING = 20
"""Documents retrieved per record."""
P_MISSING = 0.01
P_FAILED = 0.01
PARALLEL_FROM = 200_000
"""Records from which runs are written by worker processes."""

TYPE_CYCLE = (
    "lookup", "multi-evidence", "near-duplicate", "lookup", "outdated",
    "conflicting", "lookup", "unanswerable", "multi-evidence", "permission",
)
"""Question i has type TYPE_CYCLE[i % 10]; cluster c only serves questions of type TYPE_CYCLE[c % 10]."""
TYPES = tuple(dict.fromkeys(TYPE_CYCLE))

TOPICS = ("billing", "deploy", "storage", "network", "identity", "alerting",
          "backup", "search", "payments", "compliance", "onboarding", "pricing")
KINDS = ("runbook", "policy", "release note", "FAQ", "design doc", "postmortem")
SUBJECTS = ("The release window", "The rollback procedure", "The on-call rotation", "The backup job",
            "The retention policy", "The rate limit", "The access review", "The failover plan",
            "The incident channel", "The deployment gate", "The audit log", "The cost report")
VERBS = ("starts", "runs", "is reviewed", "is enforced", "is paused", "is approved", "is archived",
         "is rotated", "is escalated", "is measured", "is documented", "is replicated")
OBJECTS = ("every Monday at 09:00 UTC", "after each production deploy", "by the platform team",
           "in the eu-west region", "for thirty days", "once per quarter", "before the change freeze",
           "with two approvers", "at 500 requests per second", "for every customer tier",
           "in the shared runbook", "when the error budget is spent")


@dataclass(frozen=True)
class Plan:
    """What every run needs about the suite, precomputed once as JSON fragments."""

    seed: int
    n_docs: int
    width: int
    doc_ring: str
    """Every quoted document ID followed by a comma, the corpus twice (slices wrap around)."""
    questions: tuple[tuple, ...]
    """Per question: (question_id, cluster start, answerable, home docs, expected claims, answer, context)."""


def write_workspace(questions: int, runs: int, *, repeats: int = 1, seed: int = 0, out: Path,
                    workers: int | None = None) -> dict[str, int]:
    """Write suite and runs; return counts (questions, documents, runs, records, missing, failed).

    `workers` (default: the CPU count when there are many records) only changes the speed, never
    the bytes written."""
    for name, value in (("questions", questions), ("runs", runs), ("repeats", repeats)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise invalid("expected a whole number >= 1", f"--{name}", value)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise invalid("expected a whole number", "--seed", seed)
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise invalid("the output folder must be new or empty (a stale run would join the workspace)",
                      "--out", str(out))
    n_docs = corpus_size(questions)
    suite_dir = out / "suites" / SUITE
    suite_dir.mkdir(parents=True)
    jobs = [(config, repeat) for config in range(runs) for repeat in range(1, repeats + 1)]
    args = [(questions, seed, runs, repeats, config, repeat, str(out)) for config, repeat in jobs]
    if workers is None:
        workers = min(os.cpu_count() or 1, len(jobs)) if questions * len(jobs) >= PARALLEL_FROM else 1
    if workers > 1:
        with ProcessPoolExecutor(workers, initializer=_init_plan, initargs=(questions, seed)) as pool:
            pending = pool.map(_write_run, args)
            _write_suite(suite_dir, questions, n_docs, seed)  # meanwhile, in this process
            results = list(pending)
    else:
        _write_suite(suite_dir, questions, n_docs, seed)
        _init_plan(questions, seed)
        results = [_write_run(a) for a in args]
    return {
        "questions": questions, "documents": n_docs, "runs": len(jobs),
        "records": sum(r[0] for r in results), "missing": sum(r[1] for r in results),
        "failed": sum(r[2] for r in results),
    }


def corpus_size(questions: int) -> int:
    """10 documents per question in whole hundreds, at least 200, at most 100,000."""
    return min(max(-(-questions * CLUSTER // 100) * 100, MIN_DOCUMENTS), MAX_DOCUMENTS)


def run_name(config: int, repeat: int, runs: int, repeats: int) -> str:
    """`sys-007`, or `sys-007.r2` for the second repeat of configuration 7."""
    base = f"sys-{config:0{max(3, len(str(runs - 1)))}d}"
    return base if repeats == 1 else f"{base}.r{repeat}"


# --- the suite ------------------------------------------------------------------------------------


def _doc_id(index: int, width: int) -> str:
    return f"doc-{index:0{width}d}"


def _question_id(index: int, width: int) -> str:
    return f"q-{index:0{width}d}"


def _widths(questions: int, n_docs: int) -> tuple[int, int]:
    return max(5, len(str(n_docs - 1))), max(6, len(str(questions - 1)))


def _sentences(seed: int) -> list[str]:
    rng = random.Random(f"{seed}:sentences")
    return [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}." for _ in range(600)]


def _cluster_type(cluster: int) -> str:
    return TYPE_CYCLE[cluster % len(TYPE_CYCLE)]


def _labels(qtype: str, home: int, width: int) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Graded labels and expected claims of a question of `qtype` whose cluster starts at `home`."""
    d = [_doc_id(home + i, width) for i in range(CLUSTER)]
    if qtype == "lookup":
        return {d[0]: 2, d[5]: 1}, {"c1": [d[0]]}
    if qtype == "multi-evidence":
        return {d[0]: 2, d[1]: 2, d[2]: 1}, {"c1": [d[0]], "c2": [d[1]], "c3": [d[2]]}
    if qtype == "near-duplicate":
        return {d[0]: 2, d[1]: 0}, {"c1": [d[0]]}
    if qtype == "outdated":
        return {d[0]: 2, d[1]: 0}, {"c1": [d[0]]}
    if qtype == "conflicting":
        return {d[0]: 2, d[1]: 1}, {"c1": [d[0], d[1]], "c2": [d[1]]}
    if qtype == "unanswerable":
        return {d[4]: 0}, {}
    return {d[0]: 2}, {"c1": [d[0]]}  # permission: the relevant document is restricted to hr


def _write_suite(folder: Path, questions: int, n_docs: int, seed: int) -> None:
    dwidth, qwidth = _widths(questions, n_docs)
    sentences = _sentences(seed)
    rng = random.Random(f"{seed}:corpus")
    meta = {"name": SUITE, "version": SUITE_VERSION, "corpus_version": f"synth-corpus-{seed}",
            "rubric_version": RUBRIC_VERSION,
            "description": "Synthetic suite written by `ragslice synth` (made-up content, realistic shape)."}
    (folder / "suite.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")

    lines = []
    for index in range(n_docs):
        cluster, slot = divmod(index, CLUSTER)
        topic = TOPICS[cluster % len(TOPICS)]
        doc: dict[str, object] = {
            "id": _doc_id(index, dwidth),
            "title": f"{topic.capitalize()} {KINDS[slot % len(KINDS)]} {cluster}",
            "text": " ".join(rng.choices(sentences, k=6 + (index * 7) % 9)),
            "version": "2024.3" if _cluster_type(cluster) == "outdated" and slot == 1 else "2026.1",
        }
        if _cluster_type(cluster) == "permission" and slot == 0:
            doc["access"] = ["hr", "finance"]
        elif slot == 9 and cluster % 7 == 3:
            doc["access"] = ["legal"]
        lines.append(json.dumps(doc))
    (folder / "documents.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    rng = random.Random(f"{seed}:questions")
    lines = []
    for index in range(questions):
        qtype = TYPE_CYCLE[index % len(TYPE_CYCLE)]
        home = _home(index, n_docs)
        cluster = home // CLUSTER
        grades, support = _labels(qtype, home, dwidth)
        topic = TOPICS[cluster % len(TOPICS)]
        question: dict[str, object] = {
            "id": _question_id(index, qwidth),
            "text": f"{rng.choice(SUBJECTS)}: when and how is it handled for {topic} ({cluster})?",
            "type": qtype,
            "split": "heldout" if rng.random() < 0.3 else "dev",
            "critical": index % 10 == 3,
            "tags": [topic] if index % 4 else [topic, "escalation"],
        }
        if qtype == "permission":
            question["caller"] = ["engineering"]
        question["relevant"] = grades
        question["support"] = support
        question["claims"] = {claim: rng.choice(sentences) for claim in support}
        if qtype == "conflicting":
            question["disputed"] = f"Reviewers disagree whether {support['c2'][0]} still applies."
        lines.append(json.dumps(question))
    (folder / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _home(question: int, n_docs: int) -> int:
    """First document of the question's cluster (clusters keep the type: n_docs / 10 is a multiple of 10)."""
    return (question % (n_docs // CLUSTER)) * CLUSTER


# --- the runs -------------------------------------------------------------------------------------

_PLAN: Plan | None = None


def _init_plan(questions: int, seed: int) -> None:
    """Build the shared plan once per process (workers rebuild it rather than receive it)."""
    global _PLAN
    n_docs = corpus_size(questions)
    dwidth, qwidth = _widths(questions, n_docs)
    ring = "".join(f'"{_doc_id(i, dwidth)}",' for i in range(n_docs))
    sentences = _sentences(seed)
    rng = random.Random(f"{seed}:plan")
    rows = []
    for index in range(questions):
        qtype = TYPE_CYCLE[index % len(TYPE_CYCLE)]
        home = _home(index, n_docs)
        grades, support = _labels(qtype, home, dwidth)
        # Labelled documents a ranking may contain: (quoted ID, chance weight: relevant ones higher).
        docs = tuple((f'"{doc}"', 1.0 if grade > 0 else 0.6) for doc, grade in grades.items())
        claims = tuple(
            (claim, f'{{"id":"{claim}","citations":[{",".join(chr(34) + d + chr(34) for d in cited)}],'
                    f'"text":"{rng.choice(sentences)}"}}', rng.choice(sentences))
            for claim, cited in support.items()
        )
        answer = " ".join(rng.choices(sentences, k=2))
        context = " ".join(rng.choices(sentences, k=3))
        rows.append((_question_id(index, qwidth), home, bool(support), docs, claims, answer, context))
    _PLAN = Plan(seed, n_docs, len(_doc_id(0, dwidth)) + 3, ring + ring, tuple(rows))


def _quality(seed: int, config: int) -> tuple[float, int]:
    """A configuration's quality (0.55-0.85: how often it ranks and cites right) and its k."""
    rng = random.Random(f"{seed}:config:{config}")
    return 0.55 + 0.3 * rng.random(), (10 if config % 3 == 2 else 5)


def _write_run(args: tuple[int, int, int, int, int, int, str]) -> tuple[int, int, int]:
    """Write one run's manifest and records; return (records, missing, failed)."""
    questions, seed, runs, repeats, config, repeat, out = args
    plan = _PLAN
    if plan is None or plan.seed != seed or len(plan.questions) != questions:
        _init_plan(questions, seed)
        plan = _PLAN
    run_id = run_name(config, repeat, runs, repeats)
    folder = Path(out) / "runs" / run_id
    folder.mkdir(parents=True)
    quality, k = _quality(seed, config)
    manifest = {
        "run_id": run_id, "suite": SUITE, "suite_version": SUITE_VERSION, "corpus_version": f"synth-corpus-{seed}",
        "created_at": f"2026-11-{1 + config % 28:02d}T{(config // 28) % 24:02d}:{repeat % 60:02d}:00Z",
        "code_revision": f"{random.Random(f'{seed}:rev:{config}').getrandbits(28):07x}",
        "retrieval": {"retriever": ("bm25", "dense", "hybrid")[config % 3], "top_n": RANKING},
        "k": k, "prompt_revision": f"answer-v{1 + config % 9}", "model": f"synth-model-{config % 4}",
        "generation": {"temperature": 0.0 if repeats == 1 else 0.7}, "rubric_version": RUBRIC_VERSION,
        "group": None if repeats == 1 else run_name(config, 1, runs, 1), "repeat": None if repeats == 1 else repeat,
        "notes": f"Synthetic configuration {config} (quality {quality:.2f}).",
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    rng = random.Random(f"{seed}:run:{config}:{repeat}")
    records, missing, failed = _records(plan, rng, quality)
    with (folder / "records.jsonl").open("w", encoding="utf-8") as handle:
        for start in range(0, len(records), 50_000):
            handle.write("\n".join(records[start:start + 50_000]))
            handle.write("\n")
    return len(records), missing, failed


def _records(plan: Plan, rng: random.Random, quality: float) -> tuple[list[str], int, int]:
    """Every record line of one run, in question order; (lines, missing, failed)."""
    r = rng.random
    ring, width, n_docs = plan.doc_ring, plan.width, plan.n_docs
    span = n_docs - CLUSTER - RANKING  # choices of the first distractor outside the question's cluster
    skew = 0.5 + 5 * quality  # rank of a labelled document: RANKING * u**skew (good runs rank it higher)
    lines: list[str] = []
    missing = failed = 0
    for qid, home, answerable, docs, claims, answer, context in plan.questions:
        if r() < P_MISSING:
            missing += 1
            continue
        start = home + CLUSTER + int(r() * span)
        latency = f"{250 + 2500 * r() * r():.1f}"
        cost = f"{0.0004 + 0.004 * r():.5f}"
        if r() < P_FAILED:
            failed += 1
            if r() < 0.5:
                lines.append(f'{{"question_id":"{qid}","retrieved":[],"context":null,"answer":null,"claims":[],'
                             f'"latency_ms":30000,"cost_usd":0,"error":"upstream timeout"}}')
                continue
            ranked = ring[start * width:(start + RANKING) * width - 1]
            lines.append(f'{{"question_id":"{qid}","retrieved":[{ranked}],"context":null,"answer":null,'
                         f'"claims":[],"latency_ms":{latency},"cost_usd":{cost},"error":"generation failed: 503"}}')
            continue
        slots: dict[int, str] = {}
        for doc, weight in docs:
            if r() < quality * weight + 0.1:
                slot = int(RANKING * r() ** skew)
                while slot in slots:
                    slot = (slot + 1) % RANKING
                slots[slot] = doc
        parts = []
        used = previous = 0
        for slot in sorted(slots):
            if slot > previous:
                parts.append(ring[(start + used) * width:(start + used + slot - previous) * width - 1])
                used += slot - previous
            parts.append(slots[slot])
            previous = slot + 1
        if previous < RANKING:
            parts.append(ring[(start + used) * width:(start + used + RANKING - previous) * width - 1])
        wrong = ring[start * width:(start + 1) * width - 1]  # a distractor, cited by wrong claims
        said = []
        if answerable:
            for claim, right, text in claims:
                u = r()
                if u < quality:
                    said.append(right)
                elif u < quality + (1 - quality) / 2:
                    said.append(f'{{"id":"{claim}","citations":[{wrong}],"text":"{text}"}}')
            if len(said) < 3 and r() < 0.1:  # an unlabelled claim, worded like the last expected one
                said.append(f'{{"id":"extra","citations":[{wrong}],"text":"{claims[-1][2]}"}}')
        elif r() >= quality:
            said.append(f'{{"id":"guess","citations":[{wrong}],"text":"{answer}"}}')
        shown = answer if said else "I could not find this in the documents."
        lines.append(f'{{"question_id":"{qid}","retrieved":[{",".join(parts)}],"context":"{context}",'
                     f'"answer":"{shown}","claims":[{",".join(said)}],"latency_ms":{latency},'
                     f'"cost_usd":{cost},"error":null}}')
    return lines, missing, failed
