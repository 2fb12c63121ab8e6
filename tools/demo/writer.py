"""Building the demo from a seed and writing it as a workspace: suites/demo/ (suite, documents,
questions, reviews, the judge and its cache), runs/<run_id>/ (manifest, records, chunk map) and
policy.toml."""
from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

from .chunks import chunk_map
from .free_text import (JUDGE_NAME, JUDGE_SCRIPT, JUDGES_TOML, alignment_reviews, free_text_records, judge_cache,
                        judge_repeats, review_sample)
from .labels import demo_reviews, partial_labels, plant_label_gap, pool_labels
from .model import CORPUS_VERSION, K, MAX_CLAIMS, RUBRIC_VERSION, SEED, SUITE, SUITE_VERSION, Question
from .prose import prose, verbatim
from .questions import QuestionSet
from .runs import MODEL, PROMPT, RUNS, TEXT_PROMPT, TEXT_RUN, RunSpec
from .simulator import Simulator
from .corpus import build_world
from .world import World


def build(seed: int = SEED) -> tuple[World, list[Question], dict[str, list[dict[str, object]]]]:
    """The corpus, the questions in display order and each run's records, from `seed`."""
    world, questions, runs, _ = build_with_chunks(seed)
    return world, questions, runs


def build_with_chunks(seed: int = SEED) -> tuple[World, list[Question], dict[str, list[dict[str, object]]],
                                                 dict[str, list[dict[str, object]]]]:
    """`build` plus the chunk map (rows in document order) of each run that retrieves chunks."""
    rng = random.Random(seed)
    world = build_world(rng)
    questions = QuestionSet(world, rng).build()
    sim = Simulator(world, questions, seed)
    runs = {spec.run_id: sim.run(spec) for spec in RUNS}
    world.label_gap = plant_label_gap(world, questions, runs)
    pool_labels(questions, runs)
    partial_labels(world, questions)
    runs[TEXT_RUN.run_id] = free_text_records(world, questions, runs)
    limits = {spec.run_id: spec.chunk_chars for spec in RUNS if spec.chunk_chars is not None}
    chunks = {run_id: [row for rows in chunk_map(world, limit).values() for row in rows]  # the planted report too
              for run_id, limit in limits.items()}
    return world, questions, runs, chunks


def generate_demo(out: Path, *, seed: int = SEED) -> None:
    """Write the demo workspace under `out`: suites/demo/, runs/<run_id>/ and policy.toml.

    Deterministic: the same seed writes the same bytes. Existing files of the same names are
    overwritten; nothing else in `out` is touched.
    """
    out = Path(out)
    world, questions, runs, chunks = build_with_chunks(seed)
    suite_dir = out / "suites" / SUITE
    suite_dir.mkdir(parents=True, exist_ok=True)
    _json(suite_dir / "suite.json", {
        "name": SUITE, "version": SUITE_VERSION, "corpus_version": CORPUS_VERSION, "rubric_version": RUBRIC_VERSION,
        "max_claims": MAX_CLAIMS, "description": prose("suite")["description"],
    })
    _jsonl(suite_dir / "documents.jsonl", [world.docs[d].row() for d in sorted(world.docs)])
    _jsonl(suite_dir / "questions.jsonl", [q.row() for q in questions])
    reviews = suite_dir / "reviews"
    reviews.mkdir(exist_ok=True)
    aligned = alignment_reviews(questions, runs)
    sample, sampled = review_sample(questions, runs)
    for reviewer, rows in demo_reviews(world, questions, runs).items():
        _jsonl(reviews / f"{reviewer}.jsonl", rows + aligned.get(reviewer, []) + sampled.get(reviewer, []))
    (suite_dir / "samples").mkdir(exist_ok=True)
    _text(suite_dir / "samples" / f"{sample.name}.jsonl", sample.text())
    _text(suite_dir / "judges.toml", JUDGES_TOML)
    (suite_dir / "judges").mkdir(exist_ok=True)
    _text(suite_dir / "judges" / "checker.py", JUDGE_SCRIPT)
    (suite_dir / "judgements").mkdir(exist_ok=True)
    _jsonl(suite_dir / "judgements" / f"{JUDGE_NAME}.jsonl", judge_cache(world, questions, runs[TEXT_RUN.run_id]))
    (suite_dir / "judgements" / "repeats").mkdir(exist_ok=True)
    _jsonl(suite_dir / "judgements" / "repeats" / f"{JUDGE_NAME}.jsonl",
           judge_repeats(world, questions, runs[TEXT_RUN.run_id]))
    for spec in (*RUNS, TEXT_RUN):
        run_dir = out / "runs" / spec.run_id
        run_dir.mkdir(parents=True, exist_ok=True)
        _json(run_dir / "manifest.json", _manifest(spec, seed))
        _jsonl(run_dir / "records.jsonl", runs[spec.run_id])
        if spec.run_id in chunks:
            _jsonl(run_dir / "chunks.jsonl", chunks[spec.run_id])
    _text(out / "policy.toml", verbatim("policy.toml"))


def _manifest(spec: RunSpec, seed: int) -> dict[str, object]:
    revision = random.Random(f"{seed}/{spec.run_id}/revision").getrandbits(28)
    return {
        "run_id": spec.run_id, "suite": SUITE, "suite_version": SUITE_VERSION, "corpus_version": CORPUS_VERSION,
        "created_at": spec.created_at, "code_revision": f"{revision:07x}", "retrieval": spec.retrieval, "k": K,
        "prompt_revision": TEXT_PROMPT if spec is TEXT_RUN else PROMPT, "model": MODEL, "generation": spec.generation,
        "rubric_version": RUBRIC_VERSION,
        "group": spec.group, "repeat": spec.repeat, "notes": spec.notes,
    }


def _text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8", newline="\n")


def _jsonl(path: Path, rows: Sequence[dict[str, object]]) -> None:
    _text(path, "".join(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n" for row in rows))


def _json(path: Path, obj: dict[str, object]) -> None:
    _text(path, json.dumps(obj, ensure_ascii=False, sort_keys=False, indent=2) + "\n")
