"""The simulator: each run's records, drawn from its configuration's `Behaviour` per question, with
draws shared across configurations so that paired differences come from the configurations. What an
answer says besides the expected claims is in ``prose/answers.toml``."""
from __future__ import annotations

import math
import random
from collections.abc import Sequence

from .chunks import chunk_map
from .model import CONTEXT_SEPARATOR, K, RETURNED, Question
from .prose import fill, prose
from .runs import BEHAVIOURS, STRATIFIED, Behaviour, RunSpec
from .world import World


class Simulator:
    """Turns a configuration and a question into one record, reproducibly.

    Every question has one stream of shared draws (the same for every configuration, so paired
    differences come from the configurations, not from luck) and one stream per run for the share
    of draws a configuration does not share (`Behaviour.noise`) and for ordering distractors.
    """

    def __init__(self, world: World, questions: list[Question], seed: int):
        self.w = world
        self.questions = questions
        self.seed = seed
        self.retrievals: dict[str, dict[str, list[str]]] = {}
        self.records: dict[str, dict[str, dict[str, object]]] = {}
        self.chunks: dict[str, dict[str, list[dict[str, object]]]] = {}
        """Run ID -> its own chunk map (document ID -> chunk rows), for runs that retrieve chunks."""
        self.strata: dict[tuple[str, str], tuple[int, int]] = {}
        by_type: dict[str, list[Question]] = {}
        for q in questions:
            by_type.setdefault(q.type, []).append(q)
        for kind in STRATIFIED:
            for qtype, qs in by_type.items():
                ranks = list(range(len(qs)))
                random.Random(f"{seed}/strata/{kind}/{qtype}").shuffle(ranks)
                for q, r in zip(qs, ranks):
                    self.strata[(kind, q.id)] = (r, len(qs))

    def _draws(self, run_id: str, q: Question, noise: float, names: list[str], *, keep: Sequence[str] = ("halluc",)
               ) -> dict[str, float]:
        """One uniform draw per name: shared by every configuration, except a `noise` share drawn
        for this run alone. Names in `keep` are always shared (same model, same prompt).

        Shared draws of the `STRATIFIED` kinds are spread evenly over each question type (the
        question of rank r among n gets a draw in [r/n, (r+1)/n)), so a slice's outcome rates
        follow the configured probabilities instead of the luck of a small sample."""
        shared = random.Random(f"{self.seed}/draws/{q.id}")
        own = random.Random(f"{self.seed}/{run_id}/draws/{q.id}")
        out = {}
        for name in names:
            u = shared.random()
            stratum = self.strata.get((name.split(":")[0], q.id))
            if stratum is not None:
                u = (stratum[0] + u) / stratum[1]
            fresh, alt = own.random(), own.random()
            out[name] = alt if fresh < noise and name not in keep else u
        return out

    @staticmethod
    def _names(q: Question) -> list[str]:
        names = [f"hit:{d}" for d in q.grades] + [f"trap:{t.doc}" for t in q.traps]
        for c in q.claims:
            names += [f"follow:{c}", f"use:{c}", f"guess:{c}", f"cite2:{c}"]
        return names + ["hedge", "note", "extra", "extra-kind", "halluc", "tail"]

    def run(self, spec: RunSpec) -> list[dict[str, object]]:
        b = BEHAVIOURS[spec.behaviour]
        rng = random.Random(f"{self.seed}/{spec.run_id}/run")
        forced = self._forced(spec)
        answerable = [q for q in self.questions if q.answerable and q.id != forced.get("leak")]
        failed = set(q.id for q in rng.sample(answerable, spec.failures))
        missing = set(q.id for q in rng.sample([q for q in answerable if q.id not in failed], spec.missing))
        retrievals: dict[str, list[str]] = {}
        records: dict[str, dict[str, object]] = {}
        out = []
        for q in self.questions:
            u = self._draws(spec.run_id, q, b.noise, self._names(q))
            order = random.Random(f"{self.seed}/{spec.run_id}/order/{q.id}")
            if spec.retrieval_of is not None:
                ranking = list(self.retrievals[spec.retrieval_of][q.id])
            else:
                ranking = self._retrieve(b, q, u, order, leak=forced.get("leak") == q.id)
            if spec.chunk_chars is not None:
                chunks = self.chunks.setdefault(spec.run_id, chunk_map(self.w, spec.chunk_chars))
                ranking = self._chunk_ranking(ranking, chunks, order)
                retrievals[q.id] = ranking
                if q.id not in missing:
                    out.append(self._chunk_record(spec, b, q, ranking, chunks, u, order, failed=q.id in failed))
                continue
            retrievals[q.id] = ranking
            if q.id in missing:
                continue
            if spec.group is not None:
                unstable = random.Random(f"{self.seed}/{spec.group}/unstable/{q.id}").random() < 0.3
                if unstable:
                    u = self._draws(f"{spec.run_id}-answer", q, 1.0, self._names(q), keep=())
            claims, answer = self._answer(b, q, ranking[:K], u, answer_anyway=q.id in forced.get("answer", ()))
            record = self._record(spec, q, ranking, claims, answer, order, failed=q.id in failed)
            records[q.id] = record
            out.append(record)
        self.retrievals[spec.run_id] = retrievals
        self.records[spec.run_id] = records
        return out

    @staticmethod
    def _chunk_ranking(docs: list[str], chunks: dict[str, list[dict[str, object]]], order: random.Random
                       ) -> list[str]:
        """The document ranking as a chunk retriever returns it: each document's best chunk at the
        document's place, often followed by a neighbouring chunk of the same document (small chunks of
        one document look alike to the retriever), cut at `RETURNED` slots."""
        out: list[str] = []
        for doc in docs:
            ids = [str(c["id"]) for c in chunks[doc]]
            first = order.randrange(len(ids))
            out.append(ids[first])
            rest = ids[:first] + ids[first + 1:]
            order.shuffle(rest)
            for extra in rest[:2]:
                if order.random() < 0.45:
                    out.append(extra)
        return out[:RETURNED]

    def _chunk_record(self, spec: RunSpec, b: Behaviour, q: Question, ranking: list[str],
                      chunks: dict[str, list[dict[str, object]]], u: dict[str, float], order: random.Random, *,
                      failed: bool) -> dict[str, object]:
        """A record of a chunk-retrieving run: the answer sees the documents with a chunk in the first k
        slots and cites the chunks it read (both chunks of a document now and then)."""
        doc_of = {str(c["id"]): doc for doc, rows in chunks.items() for c in rows}
        text_of = {str(c["id"]): str(c["text"]) for rows in chunks.values() for c in rows}
        window = ranking[:K]
        visible = list(dict.fromkeys(doc_of[c] for c in window))
        claims, answer = self._answer(b, q, visible, u, answer_anyway=False)
        if claims:
            for claim in claims:
                cited: list[str] = []
                for doc in claim["citations"]:
                    read = [c for c in window if doc_of[c] == doc]
                    cited += read[:2] if len(read) > 1 and order.random() < 0.3 else read[:1]
                claim["citations"] = cited
            answer = " ".join(f"{c['text']} [{', '.join(c['citations'])}]" for c in claims)
        record = self._record(spec, q, ranking, claims, answer, order, failed=failed,
                              context=CONTEXT_SEPARATOR.join(text_of[c] for c in window))
        return record

    def _forced(self, spec: RunSpec) -> dict[str, object]:
        """The reranker's two scripted failures: one restricted document in context, two answered
        unanswerable questions that production declined."""
        if spec.behaviour != "rerank":
            return {}
        rng = random.Random(f"{self.seed}/{spec.run_id}/forced")
        prod = self.records["prod-baseline"]
        leak = next(q.id for q in self.questions if q.type == "permission" and q.answerable and q.restricted)
        declined = [q.id for q in self.questions if q.type == "unanswerable" and q.id in prod
                    and not prod[q.id]["error"] and not prod[q.id]["claims"]]
        return {"leak": leak, "answer": tuple(rng.sample(declined, 2))}

    def _retrieve(self, b: Behaviour, q: Question, u: dict[str, float], order: random.Random, *, leak: bool
                  ) -> list[str]:
        """A ranking: evidence that reaches the first k, traps above, below or out of it, then
        distractors from the question's pool; evidence that missed lands lower or not at all."""
        boost = b.critical_boost if q.critical else 0.0
        claim_docs = [docs for _, docs in q.claims.values()]
        primary = {docs[0] for docs in claim_docs}
        first = set(claim_docs[0]) if claim_docs else set()
        trap_docs = list(dict.fromkeys(t.doc for t in q.traps))

        def chance(doc: str) -> float:
            if doc not in primary:
                return b.hit_background
            if q.type == "multi-evidence" and doc not in first:
                return b.hit_extra
            return b.hit.get(q.type, b.hit["lookup"])

        top: list[str] = []
        later: list[str] = []
        for d, g in sorted(q.grades.items(), key=lambda kv: -kv[1]):
            if g > 0 and d not in trap_docs:
                (top if u[f"hit:{d}"] < min(0.995, chance(d) + boost) else later).append(d)
        above = b.above.get(q.type, b.above["other"]) * (b.critical_above if q.critical else 1.0)
        for t in trap_docs:
            x = u[f"trap:{t}"]
            if x < above:
                targets = {d for trap in q.traps if trap.doc == t for d in q.claims[trap.claim][1]}
                spots = [i for i, d in enumerate(top) if d in targets]
                top.insert(spots[0] if spots else 0, t)
            elif x < above + (b.hit.get(q.type, b.hit["lookup"]) if q.grades.get(t, 0) > 0 else b.below):
                top.append(t)
            else:
                later.append(t)
        pool = list(q.pool)
        head, tail = (pool[:1], pool[1:]) if q.lure else ([], pool)
        order.shuffle(tail)
        pool = head + tail
        for d in [d for d in pool if d not in top][: max(0, K - len(top))]:
            lo = 0 if q.lure and d == q.lure[0] else min(1, len(top))
            top.insert(order.randint(lo, len(top)), d)
        if leak and q.restricted:
            top.insert(1, q.restricted)
            if len(top) > K:
                drop = max(i for i, d in enumerate(top[:K + 1]) if q.grades.get(d, 0) <= 0 and d != q.restricted)
                top.pop(drop)
        rest = [d for d in later if order.random() < 0.7] + [d for d in pool if d not in top and d not in later]
        return list(dict.fromkeys(top + rest))[:RETURNED]

    def _answer(self, b: Behaviour, q: Question, visible: list[str], u: dict[str, float], *, answer_anyway: bool
                ) -> tuple[list[dict[str, object]], str]:
        if not q.answerable:
            if q.lure and (answer_anyway or u["halluc"] < b.halluc) and q.lure[0] in visible:
                doc, claim, text = q.lure
                return [{"id": claim, "citations": [doc], "text": text}], f"{text} [{doc}]"
            if q.type == "permission" and u["halluc"] < b.halluc / 3 and visible:
                unverified = prose("answers")["unverified"]
                claim = {"id": unverified["id"], "citations": [visible[0]], "text": unverified["text"]}
                return [claim], f"{claim['text']} [{visible[0]}]"
            return [], _abstain(u)
        claims: list[dict[str, object]] = []
        stated_main = True
        for cid, (text, docs) in q.claims.items():
            if cid == q.note:
                continue
            evidence = [d for d in visible if d in docs]
            traps = [t for t in q.traps if t.claim == cid and t.doc in visible]
            first = min(traps, key=lambda t: visible.index(t.doc)) if traps else None
            if first and (not evidence or visible.index(first.doc) < visible.index(evidence[0])):
                if q.type in ("conflicting", "outdated") and evidence and u["hedge"] < b.hedge:
                    return [], fill(prose("answers")["hedge"], a=evidence[0], b=first.doc)
                if u[f"follow:{cid}"] < b.follow:
                    claims.append({"id": first.wrong_id, "citations": [first.doc], "text": first.wrong_text})
                    stated_main = False
                    continue
            if evidence:
                if u[f"use:{cid}"] < b.use:
                    cites = evidence[:2] if len(evidence) > 1 and u[f"cite2:{cid}"] < 0.3 else evidence[:1]
                    claims.append({"id": cid, "citations": cites, "text": text})
                else:
                    stated_main = False
            elif u[f"guess:{cid}"] < b.guess:
                wrong = [d for d in visible if d not in docs]
                if wrong:
                    claims.append({"id": cid, "citations": [wrong[0]], "text": text})
                stated_main = False
            else:
                stated_main = False
        if q.note and stated_main:
            text, docs = q.claims[q.note]
            if docs[0] in visible and u["note"] < b.note:
                claims.append({"id": q.note, "citations": [docs[0]], "text": text})
        if claims and visible and u["extra"] < b.extra:
            extra = prose("answers")["extra"]
            step = extra[int(u["extra-kind"] * len(extra))]
            claims.append({"id": step["id"], "citations": [visible[0]], "text": step["text"]})
        if not claims:
            return [], _abstain(u)
        answer = " ".join(f"{c['text']} [{', '.join(c['citations'])}]" for c in claims)
        return claims, answer

    def _record(self, spec: RunSpec, q: Question, ranking: list[str], claims: list[dict[str, object]], answer: str,
                rng: random.Random, *, failed: bool, context: str | None = None) -> dict[str, object]:
        if failed:
            errors = prose("answers")["errors"]
            timeout = rng.random() < 0.6
            return {
                "question_id": q.id, "retrieved": [], "context": "", "answer": "", "claims": [],
                "latency_ms": round(30000 + rng.uniform(0, 40)) if timeout else round(rng.uniform(300, 900)),
                "cost_usd": 0.0,
                "error": errors["timeout"] if timeout else errors["unavailable"],
            }
        if context is None:
            context = CONTEXT_SEPARATOR.join(self.w.docs[d].text for d in ranking[:K])
        tokens_in = (len(context) + len(q.text) + 1600) / 4
        tokens_out = len(answer) / 4 + 12
        latency = (130 * math.exp(rng.gauss(0, 0.25)) + spec.rerank_ms * math.exp(rng.gauss(0, 0.2))
                   + (620 + 0.35 * tokens_in + 16 * tokens_out) * math.exp(rng.gauss(0, 0.22)))
        cost = tokens_in * 2.5e-6 + tokens_out * 10e-6 + spec.rerank_cost
        return {
            "question_id": q.id, "retrieved": ranking, "context": context, "answer": answer, "claims": claims,
            "latency_ms": round(latency), "cost_usd": round(cost, 6), "error": None,
        }


def _abstain(u: dict[str, float]) -> str:
    """The declined answer the question's `tail` draw picks."""
    abstain = prose("answers")["abstain"]
    return abstain[int(u["tail"] * len(abstain))]
