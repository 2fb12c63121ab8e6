"""The demo workspace: a fictional freight company's runbooks, policies, release notes, on-call
pages and postmortems, a reviewed test set over them, and eight recorded runs that tell one
release story, one chunking experiment and one free-text answer format.

`generate_demo(out)` writes the whole workspace (``suites/demo/``, ``runs/<run_id>/``,
``policy.toml``) from a fixed seed with the standard library only: no clock, no environment, no
network, so the same seed always gives the same bytes. Regenerate the committed copy from the
repository's root with ``python -m tools.demo --out data/demo``; tests/test_demo_data.py checks
it byte for byte.

The builder lives beside the product, not in it: ``ragslice demo`` reads the committed data/demo,
and nothing in `scoring` or `dashboard` imports this folder. The prose is data beside the code
(``prose/*.toml``: documents, facts, questions, answers, notes; ``files/``: workspace files written
as they are), and each kind of data has one module:

- `model`: the suite's identity and sizes, and the records (documents, facts, traps, questions, services);
- `world`: the corpus, built by `services`, `policies`, `oncall` and `incidents` in a fixed order;
- `questions`: the test set of every slice type;
- `runs`: each configuration's behaviour and each run's manifest; `simulator` draws their records;
  `chunks` cuts the chunked run's documents;
- `labels`: pooled grades, the planted label gap, the reviewers' decisions;
- `free_text`: the free-text run, its judge and cache, the reviewed sentences;
- `writer`: builds everything from the seed and writes the workspace.

The story the runs tell, by construction:

- ``prod-baseline``: production retrieval (hybrid retriever, version-recency boost, pins for the
  current documents of critical topics, access filter before retrieval) and a temperature-0 model.
- ``rerank-v2``: adds a cross-encoder reranker. It lifts recall, support and coverage on average,
  chiefly on multi-evidence questions, but it reorders without the recency boost and the pins, so
  it prefers superseded and non-authoritative passages (the outdated, conflicting and critical
  slices regress); its candidate cache puts one restricted document in front of a caller who may
  not see it; and it answers two unanswerable questions that production declined.
- ``hybrid-v1``: reciprocal-rank fusion instead of a weighted sum: small, insignificant changes
  both ways, and two questions with no record.
- ``temp07-r1..r3``: production retrieval with temperature 0.7, three repeats; some answers flip.
- ``chunk-160``: the production retriever over sentence-sized chunks (at most 160 characters, the
  run's own ``chunks.jsonl``) instead of whole documents. It ranks chunk IDs (``rb-0012#1``) and
  cites chunks. Neighbouring chunks of one document crowd the five context slots, so fewer distinct
  documents reach the answer: recall and coverage fall, and P@5 falls with them because a
  document counts once, at the slot of its first chunk (counting chunks would have shown it rise).

The labels were pooled: every document ``prod-baseline`` and ``hybrid-v1`` returned carries a grade
(0 when it does not help), so documents only the reranker brings into the first five are unjudged,
and its Judged@5 is lower. One of its recall regressions is such a label gap: an unjudged drill
report that states the answer took the place of a graded page (`labels.plant_label_gap`); grading it
turns the regression into a tie. Two reviewers' decisions come with the suite (``reviews/``): six
grades of documents the reranker brought in, one disagreement between them and one disputed
question (`labels.demo_reviews`).

``prod-text`` is production again with the free-text answer prompt: the same answers, written as
sentences citing indexes into the retrieved list (the TREC RAG format), which refresh aligns to the
expected claims. The suite declares a judge (``judges.toml``, the small program
``judges/checker.py``, its answers cached in ``judgements/checker.jsonl``), and amara and kofi
reviewed 42 of the sentences (`free_text.alignment_reviews`): the sample exposes the lexical aligner reading
refusals as claims and superseded or staging values as the current claim, and the judge keeping
only the second mistake.

Nothing here is a measurement of a real system: the records are simulated from per-slice
probabilities (`runs.BEHAVIOURS`), with draws shared across configurations and spread evenly over each
question type, so that the averages favour the reranker while the slices show why it should not
ship as it is.
"""
from __future__ import annotations

from .model import MAX_CLAIMS, SEED
from .writer import build, build_with_chunks, generate_demo

__all__ = ["MAX_CLAIMS", "SEED", "build", "build_with_chunks", "generate_demo"]
