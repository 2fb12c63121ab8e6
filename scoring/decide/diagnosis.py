"""What went wrong on one question in one run, declared once: every cause a release gate can fail on.

A record is read in this order; the first case found names the headline (`kind`), and `causes` lists
every cause found, worst first:

1. **failed**: the run has no record for the question, or its record has an error (the failure-rate
   gate). Nothing else is judged, but a restricted document its recorded ranking shows is still named.
2. **disclosure**: a document the question's caller may not see was delivered (inside the first k) or
   cited (the disclosure gate, `Disclosures`). What the rest of the record shows is said after it.
3. **retrieval**: the retriever missed the evidence (the recall and coverage gates). For a question
   with expected claims: an expected claim the answer does not cover has none of its supporting
   documents among the first k delivered (visible, and not restricted for the caller). For a question
   without expected claims (retrieval only): a relevant document is missing from the first k (R@k < 1).
4. **answer**: the evidence was delivered but the answer did not use it well (the support, coverage and
   abstention gates), as one of three causes: `misuse` (an expected claim is not covered although a
   supporting document was delivered, or a claim the answer makes is not supported: its reasons say
   why), `declined` (an answerable question, its evidence delivered, answered with no claim) or
   `answered` (an unanswerable question answered instead of abstained).
5. **ok**: the evidence was delivered and the answer used it (or, unanswerable, it abstained).

Latency and cost are gated on aggregates over every record (a p95, a mean), not on one question: the
page shows each record's own figures beside its diagnosis.

The figures are the stored ones (`question_scores`, `retrieved`, `claims`, `expected_claims`,
`records`); this module only reads them and names the case, with the documents and claims that
show it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

KINDS: tuple[str, ...] = ("failed", "disclosure", "retrieval", "answer", "ok")
"""The cases, worst first (a repeat group shows its worst repeat first)."""

HEADLINES: dict[str, str] = {
    "failed": "The record failed",
    "disclosure": "A restricted document reached the caller",
    "retrieval": "Retrieval missed the evidence",
    "answer": "Evidence delivered, but the answer misused it",
    "ok": "Evidence delivered and used",
}

CAUSES: dict[str, tuple[str, str]] = {
    "failed": ("failed", "The record failed"),
    "disclosure": ("disclosure", "A restricted document reached the caller"),
    "retrieval": ("retrieval", "Retrieval missed the evidence"),
    "misuse": ("answer", "Evidence delivered, but the answer misused it"),
    "declined": ("answer", "Evidence delivered, but the answer declined"),
    "answered": ("answer", "Answered a question the corpus cannot answer"),
}
"""Every cause a gate can fail on, worst first: the case (`KINDS`) it belongs to and its headline."""

REASON_WORDS: dict[str, str] = {
    "no_citation": "cites nothing",
    "unlabelled_claim": "not a claim the labels expect",
    "citation_not_supporting": "cites a document not labelled as supporting it",
    "citation_partial": "cites a document labelled as supporting it only partly (counts 0.5 in the graded metrics)",
    "citation_not_visible": "cites a document outside the first k delivered",
    "citation_unknown": "cites a document that is not in the corpus",
    "citation_restricted": "cites a document the caller may not see",
}
"""Why a claim is not supported, in words (`scoring.metrics.reference.REASONS` codes)."""


def reason_words(codes: Sequence[str] | None) -> list[str]:
    """The reason codes of a claim in words, in the same order (an unknown code stays as it is)."""
    return [REASON_WORDS.get(str(c), str(c)) for c in codes or []]


@dataclass(frozen=True)
class Diagnosis:
    """One run's case on one question: `kind` (one of `KINDS`), its headline and a sentence of
    evidence; every cause found (`causes`, keys of `CAUSES`, worst first); the documents the retriever
    missed (`missed`), the claims the answer got wrong (`misused`), the delivered supporting documents
    with their rank (`delivered`) and the restricted documents the caller got, with how (`disclosed`:
    "rank 2", "cited by claim c1")."""

    kind: str
    headline: str
    detail: str
    missed: tuple[str, ...] = ()
    misused: tuple[str, ...] = ()
    delivered: Mapping[str, int] = field(default_factory=dict)
    causes: tuple[str, ...] = ()
    disclosed: Mapping[str, str] = field(default_factory=dict)

    @property
    def line(self) -> str:
        return f"{self.headline}: {self.detail}" if self.detail else self.headline


def _ids(values: Any) -> list[str]:
    if values is None or isinstance(values, float):
        return []
    return [str(v) for v in values]


def _join(items: Sequence[str], limit: int = 4) -> str:
    shown = list(items)[:limit]
    more = len(items) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _count(value: Any) -> int:
    """A stored count; 0 for NULL (a row read without the column)."""
    return 0 if value is None or value != value else int(value)


def _case(cause: str, detail: str, **found: Any) -> Diagnosis:
    kind, headline = CAUSES[cause] if cause in CAUSES else (cause, HEADLINES[cause])
    return Diagnosis(kind, headline, detail, causes=() if cause == "ok" else (cause,), **found)


def _disclosed(retrieved: Sequence[Mapping[str, Any]], claims: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The restricted documents the caller got, each with how: delivered at a rank inside the first k,
    or cited by a claim (the rows of `Disclosures`' numerator that the ranking and the claims name)."""
    out: dict[str, str] = {}
    restricted = set()
    for row in retrieved:
        if row.get("restricted"):
            item = row.get("chunk_id") if row.get("chunk_id") is not None and row.get("chunk_id") == row.get(
                "chunk_id") else row.get("doc_id")
            restricted |= {str(row.get("doc_id")), str(item)}
            if row.get("visible"):
                out.setdefault(str(item), f"rank {int(row['rank'])}")
    for c in claims:
        if "citation_restricted" in _ids(c.get("reasons")):
            for doc in _ids(c.get("cited_docs")) or _ids(c.get("citations")):
                if doc in restricted and doc not in out:
                    out[doc] = f"cited by claim {c['claim_id']}"
    return out


def _disclosure_words(count: int, disclosed: Mapping[str, str], k: Any) -> str:
    named = [f"{doc} ({'delivered at ' + how + ' of the first ' + str(k) if how.startswith('rank') else how})"
             for doc, how in disclosed.items()]
    if count > len(named):
        named.append(f"{count - len(named)} more")
    return f"{count} document{'' if count == 1 else 's'} the question's caller may not see reached it: {_join(named)}"


def diagnose(score: Mapping[str, Any] | None, record: Mapping[str, Any] | None,
             retrieved: Sequence[Mapping[str, Any]], claims: Sequence[Mapping[str, Any]],
             expected: Mapping[str, Sequence[str]]) -> Diagnosis:
    """The case of one run on one question (see the module docstring). `score`: its
    `question_scores` row (None: no row); `record`: its `records` row (None: no record);
    `retrieved`: its `retrieved` rows; `claims`: its `claims` rows; `expected`: the question's
    expected claims and their supporting documents."""
    if record is None or score is None or score.get("status") == "missing":
        return _case("failed", "the run has no record for this question (scored as a failure)")
    disclosures = _count(score.get("disclosures"))
    disclosed = _disclosed(retrieved, claims) if disclosures else {}
    if score.get("status") == "failed":
        error = " ".join(str(record.get("error") or "").split())
        detail = f"its error: {error[:160]}" if error else "the record carries an error"
        if disclosures:
            return Diagnosis("failed", HEADLINES["failed"],
                             f"{detail}; {_disclosure_words(disclosures, disclosed, score.get('k'))}",
                             causes=("failed", "disclosure"), disclosed=disclosed)
        return _case("failed", detail)
    found = _use_of_evidence(score, retrieved, claims, expected)
    if not disclosures:
        return found
    rest = found.line[:1].lower() + found.line[1:]
    return Diagnosis("disclosure", HEADLINES["disclosure"],
                     f"{_disclosure_words(disclosures, disclosed, score.get('k'))}; besides, {rest}",
                     missed=found.missed, misused=found.misused, delivered=found.delivered,
                     causes=("disclosure", *found.causes), disclosed=disclosed)


def _use_of_evidence(score: Mapping[str, Any], retrieved: Sequence[Mapping[str, Any]],
                     claims: Sequence[Mapping[str, Any]], expected: Mapping[str, Sequence[str]]) -> Diagnosis:
    """Steps 3 to 5 of the module docstring for a successful record: retrieval, answer or ok."""
    delivered: dict[str, int] = {}
    for row in retrieved:
        if row.get("visible") and not row.get("restricted"):
            for item in (row.get("doc_id"), row.get("chunk_id")):
                if item is not None and item == item and str(item) not in delivered:
                    delivered[str(item)] = int(row["rank"])
    wrong = [c for c in claims if not c.get("supported")]
    wrong_text = "; ".join(
        f"claim {c['claim_id']} cites {_join(_ids(c.get('cited_docs')) or _ids(c.get('citations'))) or 'nothing'} "
        f"({', '.join(reason_words(_ids(c.get('reasons'))))})" for c in wrong[:3])
    if expected:
        made = {str(c["claim_id"]) for c in claims if c.get("supported")}
        uncovered = [cid for cid in expected if cid not in made]
        unreachable = [cid for cid in uncovered if not set(map(str, expected[cid])) & set(delivered)]
        if unreachable:
            docs = sorted({str(d) for cid in unreachable for d in expected[cid]})
            return _case("retrieval", f"no document supporting {_join(unreachable)} was among the first "
                                      f"{score.get('k')} delivered ({_join(docs)} not delivered)", missed=tuple(docs))
        if uncovered or wrong:
            used = {str(d): delivered[str(d)] for cid in expected for d in expected[cid] if str(d) in delivered}
            parts = []
            if used:
                parts.append(f"{_join([f'{d} (rank {r})' for d, r in used.items()])} supports the expected "
                             f"claim{'s' if len(expected) > 1 else ''} and was delivered")
            if not claims:
                parts.append("the answer makes no claim: it declined a question the corpus answers")
                return _case("declined", "; ".join(parts), delivered=used)
            if uncovered:
                parts.append(f"the answer does not state {_join(uncovered)} with a supporting citation")
            if wrong:
                parts.append(wrong_text)
            return _case("misuse", "; ".join(parts), misused=tuple(str(c["claim_id"]) for c in wrong), delivered=used)
        return _case("ok", "every expected claim is made and supported by a delivered document")
    answered = score.get("abstention_correct")
    if answered is not None and answered == answered:  # an unanswerable question that asks for an answer
        if answered >= 1:
            return Diagnosis("ok", "Correctly abstained", "the corpus holds no answer, and the answer makes no claim")
        return _case("answered", f"the corpus holds no answer, yet the answer makes {len(claims)} claim"
                                 f"{'' if len(claims) == 1 else 's'}" + (f": {wrong_text}" if wrong_text else ""),
                     misused=tuple(str(c["claim_id"]) for c in claims))
    relevant, hits = int(score.get("n_relevant") or 0), int(score.get("n_hits") or 0)
    if relevant and hits < relevant:
        return _case("retrieval", f"{relevant - hits} of {relevant} relevant documents are not among the first "
                                  f"{score.get('k')} delivered")
    if relevant:
        return _case("ok", f"every relevant document is among the first {score.get('k')} delivered")
    return Diagnosis("ok", "Nothing to find", "the question has no relevant document and asks for no answer")


DIAGNOSIS_SQL = (
    ("SELECT * FROM question_scores WHERE suite = $suite AND question_id = $q AND list_contains($runs, run_id)"),
    ("SELECT run_id, error FROM records WHERE question_id = $q AND list_contains($runs, run_id)"),
    ("SELECT run_id, rank, doc_id, chunk_id, visible, restricted FROM retrieved "
     "WHERE question_id = $q AND list_contains($runs, run_id) ORDER BY run_id, rank"),
    ("SELECT run_id, claim_id, supported, reasons, citations, cited_docs FROM claims "
     "WHERE question_id = $q AND list_contains($runs, run_id) ORDER BY run_id, position"),
    ("SELECT claim_id, docs FROM expected_claims WHERE suite = $suite AND question_id = $q ORDER BY claim_id"),
)
"""What `diagnose` reads, for the runs `$runs` of suite `$suite` on question `$q` (bound parameters)."""


def diagnoses(frames: Sequence[Any], run_ids: Sequence[str]) -> dict[str, Diagnosis]:
    """Each run's `Diagnosis` from the results of `DIAGNOSIS_SQL` (DataFrames, in that order)."""
    scores, records, retrieved, claims, expected = frames
    wanted = {str(cid): _ids(docs) for cid, docs in zip(expected["claim_id"], expected["docs"])}
    out = {}
    for run_id in dict.fromkeys(run_ids):
        own_score = scores[scores["run_id"] == run_id].to_dict("records")
        own_record = records[records["run_id"] == run_id].to_dict("records")
        out[run_id] = diagnose(own_score[0] if own_score else None, own_record[0] if own_record else None,
                               retrieved[retrieved["run_id"] == run_id].to_dict("records"),
                               claims[claims["run_id"] == run_id].to_dict("records"), wanted)
    return out


def read_diagnoses(con: Any, suite: str, run_ids: Sequence[str], question_id: str) -> dict[str, Diagnosis]:
    """`diagnoses` read on an open connection."""
    params = {"suite": suite, "q": question_id, "runs": list(run_ids)}
    return diagnoses([con.execute(sql, {k: v for k, v in params.items() if f"${k}" in sql}).df()
                      for sql in DIAGNOSIS_SQL], run_ids)


__all__ = ["CAUSES", "DIAGNOSIS_SQL", "Diagnosis", "HEADLINES", "KINDS", "REASON_WORDS", "diagnose", "diagnoses",
           "read_diagnoses", "reason_words"]
