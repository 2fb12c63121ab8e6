"""`ragslice align`: ask a judge about every answer sentence of some runs that its cache does not answer.

The sentences are the ones refresh aligns (records without claims, `scoring.store.alignment`), read
from the workspace scored in memory; each distinct (question, normalised sentence, citations) is one
request (`scoring.io.judges`). The answers land in the judge's cache beside the suite, which the next
refresh reads: refresh itself never calls a judge.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import invalid
from ..store.alignment import normalised
from ..store.refresh import score_workspace_in_memory
from .judges import JudgeRun, judge_missing, load_judges

REQUESTS = f"""
SELECT DISTINCT s.question_id, q.text AS question, {normalised("s.text")} AS sentence, s.citations,
       coalesce(c.claims, []) AS claims
FROM answer_sentences s
JOIN runs r ON r.run_id = s.run_id
JOIN questions q ON q.suite = r.suite AND q.question_id = s.question_id
LEFT JOIN (SELECT suite, question_id,
                  list({{'id': claim_id, 'proposition': coalesce(proposition, '')}} ORDER BY claim_id) AS claims
           FROM expected_claims GROUP BY ALL) c ON c.suite = r.suite AND c.question_id = s.question_id
WHERE s.free AND r.suite = ?
ORDER BY s.question_id, sentence
"""


@dataclass(frozen=True)
class AlignResult:
    suite: str
    run: JudgeRun


def requests_of(workspace: Path, runs: list[str], suite: str | None) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """The suite of `runs` and one request per distinct sentence of theirs (question order)."""
    con = score_workspace_in_memory(workspace, runs=runs)
    try:
        suites = sorted({s for (s,) in con.execute("SELECT DISTINCT suite FROM runs").fetchall()})
        if suite is None:
            if len(suites) > 1:
                raise invalid(f"the runs belong to several suites ({', '.join(suites)}): name one with --suite",
                              "--runs", ",".join(runs))
            suite = suites[0]
        elif suite not in suites:
            raise invalid(f"none of the runs belongs to it (their suites: {', '.join(suites)})", "--suite", suite)
        rows = con.execute(REQUESTS, [suite]).fetchall()
    finally:
        con.close()
    return suite, [(qid, {"question": question, "sentence": sentence, "citations": list(citations),
                          "claims": [dict(c) for c in claims]})
                   for qid, question, sentence, citations, claims in rows]


def align(workspace: Path, runs: list[str], judge_name: str, *, suite: str | None = None) -> AlignResult:
    """Ask judge `judge_name` of the suite's judges.toml about the runs' sentences its cache lacks."""
    suite, requests = requests_of(Path(workspace), runs, suite)
    folder = Path(workspace) / "suites" / suite
    judges = load_judges(folder / "judges.toml") if (folder / "judges.toml").exists() else {}
    if judge_name not in judges:
        raise invalid(f"is not declared in {folder / 'judges.toml'} (judges: {', '.join(judges) or 'none'})",
                      "--judge", judge_name)
    return AlignResult(suite, judge_missing(judges[judge_name], folder, requests))


__all__ = ["AlignResult", "align", "requests_of"]
