"""Corrected Support: a side's pooled Support with the judge's alignments corrected by a review sample
(`scoring.store.samples`), by prediction-powered inference (`scoring.decide.ppi`).

**What is estimated.** Pooled Support over the side's generated claims, taking each answer sentence as
reviewers would align it: ``sum of supported claims / sum of claims``, the denominator counting a failed
or missing record's charge as the Support metric does. Each answer sentence contributes (u, c): c the
claims it makes under an alignment (its expected claims, 1 when it states something no claim holds, 0
when it states nothing) and u those of them it supports (>= 1 citation, every citation labelled as
supporting that claim, inside the run's first k and not restricted for the caller: the contract's
rule, applied to the sentence's own citations). A claim two sentences share counts once per sentence
here (the scored claims merge them); the demo has none.

**The parts.** The frame: the side's sentences whose claims rest on an automatic alignment (a judge's or
the lexical aligner's), and the sample's items (reviewed since). The prediction of a frame sentence is
its automatic alignment; its truth, when it was drawn and reviewed for the sample (an alignment
decision carrying the sample's name), the reviewers' alignment. Everything else is known exactly: recorded
claims, sentences reviewers aligned outside the sample, and failed records' charge (`known`). Three
figures come out: judge-only (every frame sentence as the judge aligned it: the Support the database
holds), corrected (PPI++, `ppi.ratio_estimate`) and reviewed-only (the same with lambda = 0: the
reviewed items alone stand for their strata).

**Assumptions.** The sample is a random draw from the frame (`ragslice sample`), and the items reviewed
so far are a random subset of it: review in the queue's order. The judge's alignments and the labels
do not change between the draw and the estimate other than through the sample's reviews.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import duckdb
import numpy as np
import pandas as pd

from ..metrics.reference import normalise_sentence
from ..metrics.slices import mask, parse_slice
from ..store.samples import stratum_name
from . import ppi

CORRECTABLE = ("support",)
"""The metrics a corrected estimate exists for (pooled)."""
ESTIMATES = ("judge", "corrected")
"""What a gate on an answer metric may read: the figure as scored (`judge`, the default), or the corrected one."""


@dataclass(frozen=True)
class Corrected:
    """One side's (or a paired delta's) Support three ways, on one slice."""

    metric: str
    slice: str
    sample: str | None
    judge: float | None
    corrected: ppi.RatioEstimate
    reviewed_only: ppi.RatioEstimate
    judged: int
    """Frame items (sentences resting on an automatic alignment, or sampled)."""
    strata: list[dict[str, Any]] = field(default_factory=list)

    @property
    def differs(self) -> bool:
        c = self.corrected.estimate
        return c is not None and self.judge is not None and abs(c - self.judge) > 5e-4 or (
            self.corrected.low is not None and self.judge is not None
            and not self.corrected.low <= self.judge <= self.corrected.high)

    def to_dict(self) -> dict[str, Any]:
        c = self.corrected
        return {"metric": self.metric, "slice": self.slice, "sample": self.sample, "judge": self.judge,
                "estimate": c.estimate, "interval": None if c.low is None else [c.low, c.high],
                "se": c.se, "n_frame": c.frame, "n_sampled": c.sampled, "n_reviewed": c.reviewed,
                "reviewed_only": self.reviewed_only.estimate,
                "reviewed_only_interval": None if self.reviewed_only.low is None else
                [self.reviewed_only.low, self.reviewed_only.high],
                "lambda": c.lambdas, "method": ppi.METHOD, "valid": c.valid, "reason": c.reason,
                "strata": self.strata}

    def words(self, name: str) -> str:
        """One line: judge-only, corrected with its interval, reviewed-only, and the counts."""
        c, r = self.corrected, self.reviewed_only
        judge = "n/a" if self.judge is None else f"{self.judge:.3f}"
        if c.valid:
            corrected = f"{c.estimate:.3f} (95% {c.low:.3f} to {c.high:.3f})"
        else:
            corrected = f"none ({c.reason})"
        reviewed = ("n/a" if r.estimate is None else f"{r.estimate:.3f}" +
                    (f" (95% {r.low:.3f} to {r.high:.3f})" if r.valid else ""))
        return (f"{name} {self.metric} ({self.slice}): judge-only {judge}, corrected {corrected}, reviewed-only "
                f"{reviewed}; {c.reviewed} of {c.sampled} sampled reviewed, {c.frame} judged")


ALIGNMENTS_SQL = """
SELECT a.run_id, a.question_id, a.sentence, a.text, a.citations, a.aligner, a.decided_by, a.outcome, a.claim_ids,
       a.applied
FROM alignments a WHERE list_contains(?::VARCHAR[], a.run_id)
ORDER BY a.run_id, a.question_id, a.sentence, CASE a.aligner WHEN 'human' THEN 0 WHEN 'judge' THEN 1 ELSE 2 END,
         a.decided_by
"""


def _has(con: duckdb.DuckDBPyConnection, *tables: str) -> bool:
    names = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    return set(tables) <= names


def latest_sample(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str]) -> str | None:
    """The most recently drawn sentence sample of the suite whose runs include every one of `run_ids`."""
    if not _has(con, "samples"):
        return None
    found = con.execute("""
        SELECT sample FROM samples WHERE suite = ? AND unit = 'sentence' AND list_has_all(runs, ?::VARCHAR[])
        GROUP BY sample ORDER BY max(drawn_at) DESC, sample LIMIT 1""", [suite, list(run_ids)]).fetchall()
    return found[0][0] if found else None


SAMPLE_REVIEWS_SQL = ("SELECT question_id, sentence FROM reviews WHERE suite = ? AND sample = ? AND kind = 'alignment' "
                      "AND status = 'applied'")
"""The sentences (question, text) reviewers aligned in a review sample: the sample's truths. A review made
outside the sample counts as a label, never as the sample's."""


def sample_status(con: duckdb.DuckDBPyConnection, suite: str, run_id: str, question_id: str) -> dict[int, str]:
    """Each sentence (0-based) of the run's answer to the question that the run's latest sentence sample
    (`latest_sample`) drew: ``reviewed`` when a review made in that sample aligned it (a truth
    `corrected_support` reads), else ``to review``. Empty when no sample drew any."""
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


def _uc(outcome: str, claim_ids: Sequence[str], citations: Sequence[str], ok: dict[str, set[str]],
        visible: set[str]) -> tuple[int, int]:
    """(supported claims, claims) of a sentence under an alignment (module docstring)."""
    if outcome == "no_claim":
        return 0, 0
    if outcome != "claims":
        return 0, 1
    cites = list(citations)
    supported = sum(1 for c in claim_ids if cites and c in ok and all(d in ok[c] and d in visible for d in cites))
    return supported, len(claim_ids)


def _question_frame(con: duckdb.DuckDBPyConnection, suite: str) -> pd.DataFrame:
    return con.execute("SELECT question_id, type, split, critical, tags, answerable FROM questions WHERE suite = ? "
                       "ORDER BY question_id", [suite]).df()


def corrected_support(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str], *, slice_: str = "all",
                      sample: str | None = None, found: _Sentences | None = None,
                      questions: pd.DataFrame | None = None) -> Corrected | None:
    """Pooled Support of the runs three ways on a slice (module docstring); None when the runs answer in
    no sentences (nothing rests on an alignment: Support is as scored). `sample`: the sample to use (by
    default the latest that covers the runs); `found`, `questions`: the runs' `_sentences` and the suite's
    questions, read before."""
    inputs = _inputs(con, suite, run_ids, slice_, sample, found, questions)
    if inputs is None:
        return None
    strata, known_pair, judged, sample = inputs
    judge = ppi.judge_only(strata, known_pair)
    if judged and sample is None:
        none = ppi.RatioEstimate(None, None, None, None, judged, 0, 0,
                                 reason="no review sample covers these runs: draw one with `ragslice sample`")
        return Corrected("support", slice_, None, judge, none, none, judged)
    corrected = ppi.ratio_estimate(strata, known_pair)
    reviewed_only = ppi.ratio_estimate(strata, known_pair, lam=0.0)
    rows_out = [{"stratum": s.name, "frame": s.population, "sampled": s.drawn, "reviewed": s.reviewed,
                 "lambda": corrected.lambdas.get(s.name)} for s in strata]
    return Corrected("support", slice_, sample, judge, corrected, reviewed_only, judged, rows_out)


class _Alignment(NamedTuple):
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


class _FrameSentence(NamedTuple):
    """A frame sentence: its question and stratum, whether the sample drew it, (supported, claims) as the
    judge aligned it (`prediction`) and as the sample's reviewer did (`truth`, None until reviewed), and
    the part its applied alignment holds in the known totals."""

    question_id: str
    stratum: str
    drawn: bool
    prediction: tuple[int, int]
    truth: tuple[int, int] | None
    part: tuple[int, int]


@dataclass(frozen=True)
class _Sentences:
    """A run set's frame, every slice at once: the frame sentences, the known (supported, claims) per
    question, the sample."""

    frame: list[_FrameSentence]
    known: dict[str, tuple[float, float]]
    sample: str | None


def _sentences(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str], sample: str | None
               ) -> _Sentences | None:
    """The frame of `corrected_support` before a slice is chosen; None when the runs answer in no sentences."""
    if not _has(con, "alignments", "samples"):
        return None
    runs = list(run_ids)
    rows = [_Alignment._make(row) for row in con.execute(ALIGNMENTS_SQL, [runs]).fetchall()]
    if not rows:
        return None
    info = {q: (t, bool(a)) for q, t, a in con.execute(
        "SELECT question_id, type, answerable FROM questions WHERE suite = ?", [suite]).fetchall()}
    sample = sample or latest_sample(con, suite, runs)
    ok: dict[str, dict[str, set[str]]] = {}
    for q, claim, docs in con.execute("SELECT question_id, claim_id, docs FROM expected_claims WHERE suite = ?",
                                      [suite]).fetchall():
        ok.setdefault(q, {})[claim] = set(docs)
    visible: dict[tuple[str, str], set[str]] = {}
    for r, q, d in con.execute("SELECT run_id, question_id, doc_id FROM retrieved WHERE visible AND NOT restricted "
                               "AND list_contains(?::VARCHAR[], run_id)", [runs]).fetchall():
        visible.setdefault((r, q), set()).add(d)
    known = {q: (float(s or 0), float(c or 0)) for q, s, c in con.execute("""
        SELECT question_id, sum(n_supported), sum(n_claims) FROM question_scores
        WHERE list_contains(?::VARCHAR[], run_id) GROUP BY question_id""", [runs]).fetchall()}
    drawn_in: dict[tuple[str, str, int], str] = {}
    strata_of: list[str] = []
    marked: set[tuple[str, str]] = set()
    if sample is not None:
        drawn = con.execute("""SELECT run_id, question_id, sentence, stratum, strata
                               FROM samples WHERE suite = ? AND sample = ? ORDER BY position""",
                            [suite, sample]).fetchall()
        drawn_in = {(r, q, int(s)): stratum for r, q, s, stratum, _ in drawn if r in runs}
        strata_of = list(drawn[0][4]) if drawn else []
        marked = {(q, normalise_sentence(s)) for q, s in con.execute(SAMPLE_REVIEWS_SQL, [suite, sample]).fetchall()}
    groups: dict[tuple[str, str, int], list[_Alignment]] = {}
    for row in rows:  # in ALIGNMENTS_SQL's order: within a sentence, the human alignment first, then the judge's
        groups.setdefault((row.run_id, row.question_id, int(row.sentence)), []).append(row)
    frame = []
    for key in sorted(groups):
        run, q, _ = key
        if q not in info:
            continue  # not a question of the suite: in no slice
        own = groups[key]
        applied = [a for a in own if a.applied]
        automatic = [a for a in own if a.aligner != "human"]
        human = [a for a in own if a.aligner == "human"]
        is_sampled = key in drawn_in
        if not applied or not automatic:
            continue
        if applied[0].aligner == "human" and not is_sampled:
            continue  # reviewed outside the sample: known exactly, already in `known`
        docs, seen = ok.get(q, {}), visible.get((run, q), set())

        def counted(a: _Alignment) -> tuple[int, int]:
            return _uc(a.outcome, list(a.claim_ids), list(a.citations), docs, seen)

        reviewed = is_sampled and human and (q, normalise_sentence(str(applied[0].text))) in marked
        stratum = drawn_in[key] if is_sampled else \
            stratum_name(strata_of, {"run_id": run, "type": info[q][0], "answerable": info[q][1]})
        # the applied alignment's part leaves the known totals: the frame stands for it
        frame.append(_FrameSentence(q, stratum, is_sampled, counted(automatic[0]),
                                    counted(human[0]) if reviewed else None, counted(applied[0])))
    return _Sentences(frame, known, sample)


def _inputs(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str], slice_: str, sample: str | None,
            found: _Sentences | None = None, questions: pd.DataFrame | None = None
            ) -> tuple[list[ppi.Stratum], tuple[float, float], int, str | None] | None:
    """(strata, known (supported, claims), frame items, sample) of `corrected_support`; `found`: the run
    set's `_sentences`, `questions`: the suite's `_question_frame`, read before."""
    if found is None:
        found = _sentences(con, suite, run_ids, sample)
    if found is None:
        return None
    questions = _question_frame(con, suite) if questions is None else questions
    in_slice = set(questions[mask(questions, parse_slice(slice_))]["question_id"])
    known = np.array([0.0, 0.0])
    for q, totals in found.known.items():
        if q in in_slice:
            known += totals
    by_stratum: dict[str, dict[str, list]] = {}
    judged = 0
    for item in found.frame:
        if item.question_id not in in_slice:
            continue
        known -= item.part
        part = by_stratum.setdefault(item.stratum, {"truth": [], "rp": [], "up": [], "drawn": 0})
        part["drawn"] += int(item.drawn)
        judged += 1
        if item.truth is not None:
            part["truth"].append(item.truth)
            part["rp"].append(item.prediction)
        else:
            part["up"].append(item.prediction)
    strata = [ppi.Stratum(name, len(p["truth"]) + len(p["up"]), np.array(p["truth"], dtype=float).reshape(-1, 2),
                          np.array(p["rp"], dtype=float).reshape(-1, 2), np.array(p["up"], dtype=float).reshape(-1, 2),
                          p["drawn"]) for name, p in sorted(by_stratum.items())]
    return strata, (float(known[0]), float(known[1])), judged, found.sample


def next_review_gain(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str], *,
                     sample: str | None = None) -> list[dict[str, Any]]:
    """Per stratum: reviewed and sampled, the half-width of the corrected Support interval now, about how
    wide once every sampled item of the stratum is reviewed, and the narrowing one more review there buys
    (`ppi.projected_half_width`; None while a stratum has too few reviews for a spread)."""
    found = _inputs(con, suite, run_ids, "all", sample)
    if found is None or found[3] is None:
        return []
    strata, known = found[0], found[1]
    now = ppi.projected_half_width(strata, known, {s.name: s.reviewed for s in strata})
    out = []
    for s in strata:
        full = ppi.projected_half_width(strata, known, {s.name: max(s.drawn, s.reviewed)})
        one = ppi.projected_half_width(strata, known, {s.name: s.reviewed + 1})
        out.append({"stratum": s.name, "frame": s.population, "sampled": s.drawn, "reviewed": s.reviewed,
                    "half_width": now, "half_width_at_sample": full,
                    "gain_per_review": None if now is None or one is None else now - one})
    return out


def projected_at_sample(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str], *,
                        sample: str | None = None) -> float | None:
    """About the half-width of the corrected Support interval once every sampled item is reviewed."""
    found = _inputs(con, suite, run_ids, "all", sample)
    if found is None or found[3] is None:
        return None
    strata, known = found[0], found[1]
    return ppi.projected_half_width(strata, known, {s.name: max(s.drawn, s.reviewed) for s in strata})


@dataclass
class CorrectedFacts:
    """A comparison's corrected Support: per slice, each side's three figures and the paired delta."""

    slices: dict[str, dict[str, Corrected | None]]
    exact: dict[tuple[str, str], float | None] = field(default_factory=dict)
    """(side, slice) -> pooled Support of a side nothing of which rests on an alignment (exact)."""

    def get(self, side: str, slice_: str) -> Corrected | None:
        return self.slices.get(slice_, {}).get(side)

    def judged_sides(self, slice_: str = "all") -> list[tuple[str, Corrected]]:
        """(side, its figures) for each side, baseline first, whose Support on the slice rests on automatic
        alignments."""
        return [(side, found) for side in ("baseline", "candidate")
                if (found := self.get(side, slice_)) is not None and found.judged]

    def delta(self, slice_: str) -> ppi.RatioEstimate | None:
        b, c = self.get("baseline", slice_), self.get("candidate", slice_)
        if b is None and c is None:
            return None
        return ppi.difference(c.corrected if c is not None else _exact(self, "candidate", slice_),
                              b.corrected if b is not None else _exact(self, "baseline", slice_))

    @property
    def sample(self) -> str | None:
        return next((c.sample for row in self.slices.values() for c in row.values() if c is not None and c.sample),
                    None)

    def summary(self) -> list[str]:
        """Plain sentences: per side on all questions, judge-only vs corrected vs reviewed-only Support."""
        out = []
        for side in ("baseline", "candidate"):
            c = self.get(side, "all")
            if c is not None:
                out.append(c.words(f"The {side}'s"))
        d = self.delta("all")
        if d is not None and d.valid:
            out.append(f"Corrected paired delta of pooled Support (candidate - baseline): {d.estimate:+.3f} "
                       f"(95% {d.low:+.3f} to {d.high:+.3f}).")
        return out

    def to_dict(self) -> dict[str, Any]:
        main = self.get("candidate", "all")
        head = main.to_dict() if main is not None else {}
        rows = []
        for name, row in self.slices.items():
            d = self.delta(name)
            rows.append({"slice": name, **{side: (None if c is None else c.to_dict()) for side, c in row.items()},
                         "delta": None if d is None else d.to_dict()})
        return {"metric": "support", "aggregate": "pooled", "method": ppi.METHOD, "sample": self.sample,
                "estimate": head.get("estimate"), "interval": head.get("interval"), "judge": head.get("judge"),
                "reviewed_only": head.get("reviewed_only"), "n_sampled": head.get("n_sampled"),
                "n_reviewed": head.get("n_reviewed"), "slices": rows}


def _exact(facts: CorrectedFacts, side: str, slice_: str) -> ppi.RatioEstimate:
    """A side with nothing resting on an alignment: its figure is exact (no interval width)."""
    value = facts.exact.get((side, slice_))
    return ppi.RatioEstimate(value, 0.0 if value is not None else None, value, value, 0, 0, 0)


def read_corrected(con: duckdb.DuckDBPyConnection, suite: str, baseline_runs: Sequence[str],
                   candidate_runs: Sequence[str]) -> CorrectedFacts | None:
    """Both sides' corrected Support on all questions, answerable, unanswerable and each question type;
    None when neither side answers in sentences."""
    if not _has(con, "alignments", "samples"):
        return None
    types = [t for (t,) in con.execute("SELECT DISTINCT type FROM questions WHERE suite = ? ORDER BY type",
                                       [suite]).fetchall()]
    slices = ["all", "answerable", "unanswerable", *(f"type:{t}" for t in types)]
    facts = CorrectedFacts({})
    exact: dict[tuple[str, str], float | None] = {}
    frames = {side: _sentences(con, suite, runs, None)
              for side, runs in (("baseline", baseline_runs), ("candidate", candidate_runs))}
    if all(found is None for found in frames.values()):
        return None
    questions = _question_frame(con, suite)
    for name in slices:
        row: dict[str, Corrected | None] = {}
        for side, runs in (("baseline", baseline_runs), ("candidate", candidate_runs)):
            found = None if frames[side] is None else corrected_support(con, suite, runs, slice_=name,
                                                                         found=frames[side], questions=questions)
            row[side] = found
            if found is None:
                chosen = list(questions[mask(questions, parse_slice(name))]["question_id"])
                s, c = con.execute("SELECT sum(n_supported), sum(n_claims) FROM question_scores WHERE "
                                   "list_contains(?::VARCHAR[], run_id) AND list_contains(?::VARCHAR[], question_id)",
                                   [list(runs), chosen]).fetchall()[0]
                exact[(side, name)] = None if not c else float(s) / float(c)
        facts.slices[name] = row
    facts.exact = exact
    return facts


__all__ = ["CORRECTABLE", "ESTIMATES", "Corrected", "CorrectedFacts", "corrected_support", "read_corrected", "latest_sample", "next_review_gain",
           "projected_at_sample"]
