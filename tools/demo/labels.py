"""The labels beyond the suite's own: grades pooled from the runs that were judged, one planted label gap
in the reranker's run, and two reviewers' decisions. The prose is in ``prose/labels.toml``."""
from __future__ import annotations

from .model import CONTEXT_SEPARATOR, K, Question
from .services import partial_facts
from .prose import fill, prose
from .world import World

POOLED_FROM = ("prod-baseline", "hybrid-v1")
"""The runs whose returned documents (all `RETURNED` of them) were judged when the suite was labelled:
every one of them carries a grade, 0 when it does not help. The reranker came later, so documents
only it brings into the first k carry no label (unjudged; they count as not relevant)."""
GAP_RUN = "rerank-v2"
REVIEWERS = ("amara", "kofi")


def partial_labels(world: World, questions: list[Question]) -> int:
    """Label each service's catalog page as partly supporting the claims of the facts it states one clause
    of (`services.partial_facts`: that the service fails over to a warm standby, not where; that its
    certificates are rotated, not how often; ...), on the questions that grade the page relevant (a
    supporting document is relevant). Returns the number of (question, claim) labels. Runs that cite the
    page for such a claim then score 0.5 for it in graded Support and Coverage, and 0 in the strict
    ones, as before."""
    pages = {f"{s.code}-{key}": s.docs["overview"] for s in world.services for key in partial_facts(s)}
    labelled = 0
    for q in questions:
        for claim, (_, docs) in q.claims.items():
            page = pages.get(claim)
            if page is not None and page not in docs and q.grades.get(page, 0) > 0:
                q.partial[claim] = (page,)
                labelled += 1
    return labelled


def plant_label_gap(world: World, questions: list[Question], runs: dict[str, list[dict[str, object]]]) -> str:
    """Give the reranker one regression that is a label gap, and return its question ID.

    On the first failover question where the reranker keeps fewer of the graded documents in its first k
    than production (exactly one fewer), a drill report of that failover (written by the owning team,
    stating the fact asked for) takes the place of an unlabelled, uncited document in the reranker's
    first k. Nobody judged the report, so the question shows a recall regression until a reviewer grades it.
    """
    base = {r["question_id"]: r for r in runs["prod-baseline"]}
    cand = {r["question_id"]: r for r in runs[GAP_RUN]}
    for q in questions:
        b, c = base.get(q.id), cand.get(q.id)
        if "failover" not in q.tags or not b or not c or b["error"] or c["error"]:
            continue
        graded = {d for d, g in q.grades.items() if g > 0}
        kept_b, kept_c = graded & set(b["retrieved"][:K]), graded & set(c["retrieved"][:K])
        cited = {d for claim in c["claims"] for d in claim["citations"]}
        free = [i for i, d in enumerate(c["retrieved"][:K]) if d not in q.grades and d not in cited]
        service = next((s for s in world.services if s.code in q.tags), None)
        if service is None or not free or not (kept_c < kept_b and len(kept_b) - len(kept_c) == 1):
            continue
        drill, values = prose("labels")["drill_report"], service.values() | {"observed": max(1, service.rto - 4)}
        report = world.doc("dr", fill(drill["title"], **values), fill(drill["text"], **values), topics=())
        ranking = list(c["retrieved"])
        ranking[free[0]] = report
        c["retrieved"] = ranking
        c["context"] = CONTEXT_SEPARATOR.join(world.docs[d].text for d in ranking[:K])
        return q.id
    raise AssertionError("no failover question fits the planted label gap")


def pool_labels(questions: list[Question], runs: dict[str, list[dict[str, object]]]) -> None:
    """Grade 0 for every document `POOLED_FROM` returned that has no grade yet (see `POOLED_FROM`)."""
    returned: dict[str, list[str]] = {}
    for run_id in POOLED_FROM:
        for r in runs[run_id]:
            returned.setdefault(str(r["question_id"]), []).extend(r["retrieved"])
    for q in questions:
        for d in returned.get(q.id, []):
            q.grades.setdefault(d, 0)


def demo_reviews(world: World, questions: list[Question], runs: dict[str, list[dict[str, object]]]
                 ) -> dict[str, list[dict[str, object]]]:
    """Two reviewers' decisions (one file each) on documents the reranker brought in unjudged.

    amara grades six of them: a document of the question's own service gives background (1), any other
    does not help (0). kofi grades the first four with her, agreeing on three; on a background page he
    says it does not help, and the label is disputed. kofi also disputes one conflicting question. The
    planted label gap is left for the dashboard's Labels page.
    """
    by_id = {q.id: q for q in questions}
    own, other = [], []
    for r in runs[GAP_RUN]:
        q = by_id[str(r["question_id"])]
        if q.id == world.label_gap or r["error"] or not q.answerable:
            continue
        unjudged = [d for d in r["retrieved"][:K] if d not in q.grades]
        service = next((t for t in q.tags if t in {s.code for s in world.services}), None)
        for d in unjudged:
            pick = own if service and d in world.topics.get(service, ()) else other
            pick.append((q.id, d))
            break
    pairs = [(*own[0], 1), (*other[0], 0), (*own[1], 1), (*other[1], 0), (*own[2], 1), (*other[2], 0)]
    texts = prose("labels")["reviews"]
    notes = {int(grade): note for grade, note in texts["grade_notes"].items()}
    amara = [{"at": f"2026-11-09T09:{12 + 3 * i:02d}:00Z", "reviewer": "amara", "kind": "relevance",
              "question_id": q, "doc_id": d, "grade": g, "note": notes[g]} for i, (q, d, g) in enumerate(pairs)]
    kofi = [{"at": f"2026-11-09T14:{5 + 4 * i:02d}:00Z", "reviewer": "kofi", "kind": "relevance",
             "question_id": q, "doc_id": d, "grade": g, "note": notes[g]} for i, (q, d, g) in enumerate(pairs[:4])]
    kofi[2] |= {"grade": 0, "note": texts["disagreement"]}
    disputed = next(q for q in questions if q.type == "conflicting" and not q.disputed)
    kofi.append({"at": "2026-11-09T14:30:00Z", "reviewer": "kofi", "kind": "dispute", "question_id": disputed.id,
                 "note": texts["dispute"]})
    return {"amara": amara, "kofi": kofi}
