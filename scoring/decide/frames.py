"""The frames a corrected estimate reads (`scoring.decide.corrected`): the items whose figure rests on an
automatic alignment, each with its prediction (as the judge aligned it) and, once reviewed in the review
sample, its truth (as reviewers aligned it); and the rest of the figure, known exactly.

**Sentences** (Support; a sample of unit `sentence`). An item is an answer sentence whose applied
alignment is automatic (a judge's or the lexical aligner's), or one the sample drew. It contributes
(u, c): c the claims it makes under an alignment (its expected claims, 1 when it states something no
claim holds, 0 when it states nothing) and u those of them it supports (>= 1 citation, every citation
labelled as fully supporting that claim, inside the run's first k and not restricted for the caller:
the contract's rule, applied to the sentence's own citations). A claim two sentences share counts once
per sentence here (the scored claims merge them); the demo has none. Its truth is known once a review
made in the sample aligned it.

**Questions** (Coverage, correct abstention, false abstention; a sample of unit `question`). An item is
a (run, question) pair of a successful record at least one of whose answer sentences rests on an
automatic alignment, or one the sample drew. Its value is the question's own under an alignment of every
sentence: for Coverage (covered, expected), the expected claims the answer makes and supports over the
expected claims; for the two abstention flags (abstained, 1), abstained when the sentences make no claim.
The claims are made from the aligned sentences as scoring makes them (`reference.sentence_claims`: one
claim per aligned claim ID with the union of its sentences' citations) and judged by the contract's rule
as above. Its prediction aligns each sentence as the judge did (a sentence reviewers aligned outside the
sample, as they did: that is a label); its truth aligns every sentence as reviewers did, and is known
once every sentence of the answer has a reviewers' alignment and one of them was made in the sample (the
review that completes the question is the sample's). An item is counted only where its metric applies
(Coverage: expected claims; the abstention flags: the question's `question_scores` value is not n/a).

**Known exactly**: everything else of the figure (recorded claims, failed and missing records, sentences
and questions reviewers aligned outside the sample), per question, from `question_scores`; each frame
item's own part (its applied alignment's figure, as the database holds it) leaves the known totals, since
the frame stands for it.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import duckdb

from ..metrics.reference import Alignment, normalise_sentence, sentence_claims
from ..store.samples import stratum_name

QUESTION_METRICS = ("coverage", "abstention_correct", "false_abstention")
"""The metrics whose frame is the question (the answer as a whole), not the sentence."""
UNIT = {"support": "sentence", **{m: "question" for m in QUESTION_METRICS}}
"""The sample unit each correctable metric reads."""

ALIGNMENTS_SQL = """
SELECT a.run_id, a.question_id, a.sentence, a.text, a.citations, a.aligner, a.decided_by, a.outcome, a.claim_ids,
       a.applied
FROM alignments a WHERE list_contains(?::VARCHAR[], a.run_id)
ORDER BY a.run_id, a.question_id, a.sentence, CASE a.aligner WHEN 'human' THEN 0 WHEN 'judge' THEN 1 ELSE 2 END,
         a.decided_by
"""

SAMPLE_REVIEWS_SQL = ("SELECT question_id, sentence FROM reviews WHERE suite = ? AND sample = ? AND kind = 'alignment' "
                      "AND status = 'applied'")
"""The sentences (question, text) reviewers aligned in a review sample: the sample's truths. A review made
outside the sample counts as a label, never as the sample's."""

QUESTION_VALUES_SQL = """
SELECT run_id, question_id, status = 'ok' AS ok,
       n_expected_supported, n_expected, abstention_correct::INTEGER, false_abstention::INTEGER
FROM question_scores WHERE list_contains(?::VARCHAR[], run_id)
"""
"""Each (run, question)'s figures as scored, for the question metrics' known totals and items' parts."""


def has_tables(con: duckdb.DuckDBPyConnection, *tables: str) -> bool:
    names = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    return set(tables) <= names


def latest_sample(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str], unit: str = "sentence"
                  ) -> str | None:
    """The most recently drawn sample of the unit, of the suite, whose runs include every one of `run_ids`."""
    if not has_tables(con, "samples"):
        return None
    found = con.execute("""
        SELECT sample FROM samples WHERE suite = ? AND unit = ? AND list_has_all(runs, ?::VARCHAR[])
        GROUP BY sample ORDER BY max(drawn_at) DESC, sample LIMIT 1""", [suite, unit, list(run_ids)]).fetchall()
    return found[0][0] if found else None


def sample_unit(con: duckdb.DuckDBPyConnection, suite: str, sample: str) -> str | None:
    """The unit of a drawn sample of the suite, None when the database holds no sample of that name."""
    if not has_tables(con, "samples"):
        return None
    found = con.execute("SELECT any_value(unit) FROM samples WHERE suite = ? AND sample = ?", [suite, sample]).fetchall()
    return found[0][0] if found else None


def sample_status(con: duckdb.DuckDBPyConnection, suite: str, run_id: str, question_id: str) -> dict[int, str]:
    """Each sentence (0-based) of the run's answer to the question that the run's latest sentence sample
    (`latest_sample`) drew: ``reviewed`` when a review made in that sample aligned it (a truth the
    corrected Support reads), else ``to review``. Empty when no sample drew any."""
    sample = latest_sample(con, suite, [run_id])
    if sample is None:
        return {}
    marked = {normalise_sentence(text) for q, text in con.execute(SAMPLE_REVIEWS_SQL, [suite, sample]).fetchall()
              if q == question_id}
    drawn = con.execute("""SELECT p.sentence, a.text FROM samples p JOIN answer_sentences a
                           ON a.run_id = p.run_id AND a.question_id = p.question_id AND a.sentence = p.sentence
                           WHERE p.suite = ? AND p.sample = ? AND p.run_id = ? AND p.question_id = ?""",
                        [suite, sample, run_id, question_id]).fetchall()
    return {int(n): "reviewed" if normalise_sentence(text) in marked else "to review" for n, text in drawn}


class AlignmentRow(NamedTuple):
    """One row of `ALIGNMENTS_SQL`."""

    run_id: str
    question_id: str
    sentence: int
    text: str
    citations: list[str]
    aligner: str
    decided_by: str
    outcome: str
    claim_ids: list[str]
    applied: bool


class Item(NamedTuple):
    """A frame item: its question and stratum, whether the sample drew it, its value (numerator,
    denominator) as the judge aligned it (`prediction`) and as the sample's reviewers did (`truth`, None
    until reviewed), the part its applied alignment holds in the known totals, and its run."""

    question_id: str
    stratum: str
    drawn: bool
    prediction: tuple[float, float]
    truth: tuple[float, float] | None
    part: tuple[float, float]
    run_id: str = ""


@dataclass(frozen=True)
class Frame:
    """A run set's frame for one metric, every slice at once: the items, the known (numerator,
    denominator) per question (the items' parts included), the sample."""

    items: list[Item]
    known: dict[str, tuple[float, float]]
    sample: str | None


@dataclass(frozen=True)
class Answers:
    """What both units read of a run set (`read_answers`; None when the runs answer in no sentences): its
    alignments by sentence, the suite's questions (type, answerable), the fully supporting documents of
    each expected claim, and each run's visible, unrestricted documents per question."""

    groups: dict[tuple[str, str, int], list[AlignmentRow]]
    info: dict[str, tuple[str, bool]]
    ok: dict[str, dict[str, set[str]]]
    visible: dict[tuple[str, str], set[str]]


def read_answers(con: duckdb.DuckDBPyConnection, suite: str, runs: list[str]) -> Answers | None:
    if not has_tables(con, "alignments", "samples"):
        return None
    rows = [AlignmentRow._make(row) for row in con.execute(ALIGNMENTS_SQL, [runs]).fetchall()]
    if not rows:
        return None
    info = {q: (t, bool(a)) for q, t, a in con.execute(
        "SELECT question_id, type, answerable FROM questions WHERE suite = ?", [suite]).fetchall()}
    ok: dict[str, dict[str, set[str]]] = {}
    for q, claim, docs in con.execute("SELECT question_id, claim_id, docs FROM expected_claims WHERE suite = ?",
                                      [suite]).fetchall():
        ok.setdefault(q, {})[claim] = set(docs)
    visible: dict[tuple[str, str], set[str]] = {}
    for r, q, d in con.execute("SELECT run_id, question_id, doc_id FROM retrieved WHERE visible AND NOT restricted "
                               "AND list_contains(?::VARCHAR[], run_id)", [runs]).fetchall():
        visible.setdefault((r, q), set()).add(d)
    groups: dict[tuple[str, str, int], list[AlignmentRow]] = {}
    for row in rows:  # in ALIGNMENTS_SQL's order: within a sentence, the human alignment first, then the judge's
        groups.setdefault((row.run_id, row.question_id, int(row.sentence)), []).append(row)
    return Answers(groups, info, ok, visible)


def _drawn(con: duckdb.DuckDBPyConnection, suite: str, sample: str | None, runs: list[str]
           ) -> tuple[dict[tuple, str], list[str], set[tuple[str, str]]]:
    """(drawn item -> its stratum, the sample's stratum variables, the (question, normalised sentence)
    pairs the sample's reviews aligned). Items are (run, question, sentence) or (run, question)."""
    if sample is None:
        return {}, [], set()
    drawn = con.execute("""SELECT run_id, question_id, sentence, stratum, strata
                           FROM samples WHERE suite = ? AND sample = ? ORDER BY position""", [suite, sample]).fetchall()
    items = {((r, q) if s is None else (r, q, int(s))): stratum for r, q, s, stratum, _ in drawn if r in runs}
    marked = {(q, normalise_sentence(s)) for q, s in con.execute(SAMPLE_REVIEWS_SQL, [suite, sample]).fetchall()}
    return items, list(drawn[0][4]) if drawn else [], marked


def answer_values(sentences: Iterable[AlignmentRow], ok: dict[str, set[str]], visible: set[str]
                  ) -> tuple[int, int]:
    """(expected claims made and supported, claims made) of an answer whose sentences are aligned as
    given (module docstring, questions). Of one sentence, (supported claims, claims): its claims are all
    expected ones, or one unlabelled claim, or none (module docstring, sentences)."""
    sentences = list(sentences)
    claims = sentence_claims([list(s.citations) for s in sentences],
                             [Alignment(s.outcome, tuple(s.claim_ids)) for s in sentences])
    covered = sum(1 for claim, docs in claims
                  if claim in ok and docs and all(d in ok[claim] and d in visible for d in docs))
    return covered, len(claims)


def sentence_frame(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str], sample: str | None,
                   read: Answers | None = None) -> Frame | None:
    """Support's frame (module docstring, sentences); None when the runs answer in no sentences. `sample`:
    the sentence sample to read (by default the latest that covers the runs)."""
    runs = list(run_ids)
    read = read or read_answers(con, suite, runs)
    if read is None:
        return None
    sample = sample or latest_sample(con, suite, runs)
    drawn_in, strata_of, marked = _drawn(con, suite, sample, runs)
    known = {q: (float(s or 0), float(c or 0)) for q, s, c in con.execute("""
        SELECT question_id, sum(n_supported), sum(n_claims) FROM question_scores
        WHERE list_contains(?::VARCHAR[], run_id) GROUP BY question_id""", [runs]).fetchall()}
    items = []
    for key in sorted(read.groups):
        run, q, _ = key
        if q not in read.info:
            continue  # not a question of the suite: in no slice
        own = read.groups[key]
        applied = [a for a in own if a.applied]
        automatic = [a for a in own if a.aligner != "human"]
        human = [a for a in own if a.aligner == "human"]
        is_sampled = key in drawn_in
        if not applied or not automatic:
            continue
        if applied[0].aligner == "human" and not is_sampled:
            continue  # reviewed outside the sample: known exactly, already in `known`
        docs, seen = read.ok.get(q, {}), read.visible.get((run, q), set())

        def counted(a: AlignmentRow) -> tuple[int, int]:
            return answer_values([a], docs, seen)

        reviewed = is_sampled and human and (q, normalise_sentence(str(applied[0].text))) in marked
        stratum = drawn_in[key] if is_sampled else \
            stratum_name(strata_of, {"run_id": run, "type": read.info[q][0], "answerable": read.info[q][1]})
        items.append(Item(q, stratum, is_sampled, counted(automatic[0]), counted(human[0]) if reviewed else None,
                          counted(applied[0]), run))
    return Frame(items, known, sample)


def question_frames(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str], sample: str | None,
                    read: Answers | None = None) -> dict[str, Frame] | None:
    """The frames of `QUESTION_METRICS` (module docstring, questions); None when the runs answer in no
    sentences. `sample`: the question sample to read (by default the latest that covers the runs)."""
    runs = list(run_ids)
    read = read or read_answers(con, suite, runs)
    if read is None:
        return None
    sample = sample or latest_sample(con, suite, runs, "question")
    drawn_in, strata_of, marked = _drawn(con, suite, sample, runs)
    scored = {(r, q): (ok, (cs, ce), (ac, 1), (fa, 1)) for r, q, ok, cs, ce, ac, fa in
              con.execute(QUESTION_VALUES_SQL, [runs]).fetchall()}
    known: dict[str, dict[str, list[float]]] = {m: {} for m in QUESTION_METRICS}
    for (_, q), (_, *values) in scored.items():
        for metric, (num, den) in zip(QUESTION_METRICS, values):
            if num is not None and den:
                total = known[metric].setdefault(q, [0.0, 0.0])
                total[0] += float(num)
                total[1] += float(den)
    answers: dict[tuple[str, str], list[list[AlignmentRow]]] = {}
    for (run, q, _), own in sorted(read.groups.items()):
        answers.setdefault((run, q), []).append(own)
    items: dict[str, list[Item]] = {m: [] for m in QUESTION_METRICS}
    for (run, q), sentences in answers.items():
        if q not in read.info or not scored.get((run, q), (False,))[0]:
            continue  # not a question of the suite, or not a successful record: known exactly
        predicted, truths, automatic, in_sample = [], [], False, False
        for own in sentences:
            human = next((a for a in own if a.aligner == "human"), None)
            machine = next((a for a in own if a.aligner != "human"), human)
            is_marked = human is not None and (q, normalise_sentence(str(human.text))) in marked
            label = human is not None and not is_marked  # aligned by reviewers outside the sample
            predicted.append(human if label else machine)
            truths.append(human)
            automatic = automatic or not label
            in_sample = in_sample or is_marked
        is_sampled = (run, q) in drawn_in
        if not automatic and not is_sampled:
            continue  # every sentence reviewed outside the sample: known exactly
        reviewed = is_sampled and in_sample and all(t is not None for t in truths)
        docs, seen = read.ok.get(q, {}), read.visible.get((run, q), set())
        covered, claims = answer_values(predicted, docs, seen)
        true_values = answer_values(truths, docs, seen) if reviewed else None
        stratum = drawn_in[(run, q)] if is_sampled else \
            stratum_name(strata_of, {"run_id": run, "type": read.info[q][0], "answerable": read.info[q][1]})
        _, coverage, correct, false = scored[(run, q)]
        for metric, (num, den) in zip(QUESTION_METRICS, (coverage, correct, false)):
            if num is None or not den:
                continue  # the metric does not apply to the question
            if metric == "coverage":
                prediction = (float(covered), float(den))
                truth = None if true_values is None else (float(true_values[0]), float(den))
            else:
                prediction = (float(claims == 0), 1.0)
                truth = None if true_values is None else (float(true_values[1] == 0), 1.0)
            items[metric].append(Item(q, stratum, is_sampled, prediction, truth, (float(num), float(den)), run))
    return {m: Frame(items[m], {q: (t[0], t[1]) for q, t in known[m].items()}, sample) for m in QUESTION_METRICS}


def answers_reviewed(frames: dict[str, Frame]) -> tuple[int, int]:
    """(answers drawn, answers reviewed) of a question sample over the run set, whatever metric applies
    to each (`question_frames`)."""
    drawn = {(i.run_id, i.question_id) for f in frames.values() for i in f.items if i.drawn}
    reviewed = {(i.run_id, i.question_id) for f in frames.values() for i in f.items if i.truth is not None}
    return len(drawn), len(reviewed)


__all__ = ["ALIGNMENTS_SQL", "QUESTION_METRICS", "SAMPLE_REVIEWS_SQL", "UNIT", "AlignmentRow", "Frame", "Item", "answers_reviewed",
           "answer_values", "has_tables", "read_answers", "Answers", "latest_sample", "question_frames", "sample_status", "sample_unit",
           "sentence_frame"]
