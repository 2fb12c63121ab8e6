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
from .judges import JudgeRun, RepeatRun, judge_again, judge_missing, load_judges

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


CITED = """
SELECT DISTINCT d.doc_id, d.text FROM answer_sentences s JOIN runs r ON r.run_id = s.run_id
JOIN documents d ON d.suite = r.suite AND list_contains(s.citations, d.doc_id)
WHERE s.free AND r.suite = ?
"""
"""The documents the runs' sentences cite, with their text: what a judge that grades support is sent."""


@dataclass(frozen=True)
class AlignResult:
    suite: str
    run: JudgeRun
    repeated: RepeatRun | None = None


def requests_of(workspace: Path, runs: list[str], suite: str | None, *, documents: bool = False
                ) -> tuple[str, list[tuple[str, dict[str, Any]]], dict[str, str]]:
    """The suite of `runs`, one request per distinct sentence of theirs (question order), and (with
    `documents`) the text of every document they cite."""
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
        texts = dict(con.execute(CITED, [suite]).fetchall()) if documents else {}
    finally:
        con.close()
    return suite, [(qid, {"question": question, "sentence": sentence, "citations": list(citations),
                          "claims": [dict(c) for c in claims]})
                   for qid, question, sentence, citations, claims in rows], texts


def align(workspace: Path, runs: list[str], judge_name: str, *, suite: str | None = None,
          repeat: int | None = None, sample: int | None = None, seed: int = 0) -> AlignResult:
    """Ask judge `judge_name` of the suite's judges.toml about the runs' sentences its cache lacks; with
    `repeat` and `sample`, then ask it again, `repeat` times each, about a seeded sample of `sample` of
    them (`judges.judge_again`)."""
    if (repeat is None) != (sample is None):
        raise invalid("--repeat and --sample go together: how many times to ask again, and how many sentences",
                      "--repeat" if repeat is None else "--sample", repeat if repeat is not None else sample)
    suite, requests, texts = requests_of(Path(workspace), runs, suite, documents=True)
    folder = Path(workspace) / "suites" / suite
    judges = load_judges(folder / "judges.toml") if (folder / "judges.toml").exists() else {}
    if judge_name not in judges:
        raise invalid(f"is not declared in {folder / 'judges.toml'} (judges: {', '.join(judges) or 'none'})",
                      "--judge", judge_name)
    judge = judges[judge_name]
    run = judge_missing(judge, folder, requests, texts)
    repeated = None
    if repeat is not None and sample is not None:
        repeated = judge_again(judge, folder, requests, repeats=repeat, sample=sample, seed=seed, documents=texts)
    return AlignResult(suite, run, repeated)


__all__ = ["AlignResult", "align", "requests_of"]
