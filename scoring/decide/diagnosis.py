"""Which of the two ways a RAG answer fails happened to one question in one run, declared once.

A record is read in this order, first match wins:

1. **failed**: the run has no record for the question, or its record has an error. Nothing else
   is judged: the failure is what happened.
2. **retrieval**: the retriever missed the evidence. For a question with expected claims: an
   expected claim the answer does not cover has none of its supporting documents among the
   first k delivered (visible, and not restricted for the caller). For a question without
   expected claims (retrieval only): a relevant document is missing from the first k (R@k < 1).
3. **answer**: the evidence was delivered but the answer misused it: an expected claim is not
   covered although a supporting document was delivered, a claim the answer makes is not
   supported (its reasons say why), or an unanswerable question was answered instead of
   abstained.
4. **ok**: the evidence was delivered and the answer used it (or, unanswerable, it abstained).

The figures are the stored ones (`question_scores`, `retrieved`, `claims`, `expected_claims`,
`records`); this module only reads them and names the case, with the documents and claims that
show it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

KINDS: tuple[str, ...] = ("failed", "retrieval", "answer", "ok")
"""The cases, worst first (a repeat group shows its worst repeat first)."""

HEADLINES: dict[str, str] = {
    "failed": "The record failed",
    "retrieval": "Retrieval missed the evidence",
    "answer": "Evidence delivered, but the answer misused it",
    "ok": "Evidence delivered and used",
}

REASON_WORDS: dict[str, str] = {
    "no_citation": "cites nothing",
    "unlabelled_claim": "not a claim the labels expect",
    "citation_not_supporting": "cites a document not labelled as supporting it",
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
    evidence; the documents the retriever missed (`missed`), the claims the answer got wrong
    (`misused`) and the delivered supporting documents with their rank (`delivered`)."""

    kind: str
    headline: str
    detail: str
    missed: tuple[str, ...] = ()
    misused: tuple[str, ...] = ()
    delivered: Mapping[str, int] = field(default_factory=dict)

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


def diagnose(score: Mapping[str, Any] | None, record: Mapping[str, Any] | None,
             retrieved: Sequence[Mapping[str, Any]], claims: Sequence[Mapping[str, Any]],
             expected: Mapping[str, Sequence[str]]) -> Diagnosis:
    """The case of one run on one question (see the module docstring). `score`: its
    `question_scores` row (None: no row); `record`: its `records` row (None: no record);
    `retrieved`: its `retrieved` rows; `claims`: its `claims` rows; `expected`: the question's
    expected claims and their supporting documents."""
    if record is None or score is None or score.get("status") == "missing":
        return Diagnosis("failed", HEADLINES["failed"], "the run has no record for this question (scored as a failure)")
    if score.get("status") == "failed":
        error = " ".join(str(record.get("error") or "").split())
        return Diagnosis("failed", HEADLINES["failed"],
                         f"its error: {error[:160]}" if error else "the record carries an error")
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
            return Diagnosis("retrieval", HEADLINES["retrieval"],
                             f"no document supporting {_join(unreachable)} was among the first "
                             f"{score.get('k')} delivered ({_join(docs)} not delivered)",
                             missed=tuple(docs))
        if uncovered or wrong:
            used = {str(d): delivered[str(d)] for cid in expected for d in expected[cid] if str(d) in delivered}
            parts = []
            if used:
                parts.append(f"{_join([f'{d} (rank {r})' for d, r in used.items()])} supports the expected "
                             f"claim{'s' if len(expected) > 1 else ''} and was delivered")
            if uncovered:
                parts.append(f"the answer does not state {_join(uncovered)} with a supporting citation")
            if wrong:
                parts.append(wrong_text)
            return Diagnosis("answer", HEADLINES["answer"], "; ".join(parts),
                             misused=tuple(str(c["claim_id"]) for c in wrong), delivered=used)
        return Diagnosis("ok", HEADLINES["ok"], "every expected claim is made and supported by a delivered document")
    answered = score.get("abstention_correct")
    if answered is not None and answered == answered:  # an unanswerable question that asks for an answer
        if answered >= 1:
            return Diagnosis("ok", "Correctly abstained", "the corpus holds no answer, and the answer makes no claim")
        return Diagnosis("answer", HEADLINES["answer"],
                         f"the corpus holds no answer, yet the answer makes {len(claims)} claim"
                         f"{'' if len(claims) == 1 else 's'}" + (f": {wrong_text}" if wrong_text else ""),
                         misused=tuple(str(c["claim_id"]) for c in claims))
    relevant, hits = int(score.get("n_relevant") or 0), int(score.get("n_hits") or 0)
    if relevant and hits < relevant:
        return Diagnosis("retrieval", HEADLINES["retrieval"],
                         f"{relevant - hits} of {relevant} relevant documents are not among the first "
                         f"{score.get('k')} delivered")
    if relevant:
        return Diagnosis("ok", HEADLINES["ok"], f"every relevant document is among the first {score.get('k')} delivered")
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


__all__ = ["DIAGNOSIS_SQL", "Diagnosis", "HEADLINES", "KINDS", "REASON_WORDS", "diagnose", "diagnoses",
           "read_diagnoses", "reason_words"]
