"""The test set: questions over a `World` of each slice type, with their grades, expected claims,
traps and lures, in display order with IDs and a stratified dev / held-out split. The prose is the
facts' (the corpus modules) and ``prose/questions.toml``'s."""
from __future__ import annotations

import random
from collections.abc import Sequence

from .model import Fact, Question, Service, Trap
from .prose import fill, prose
from .world import World

RESTRICTED_KINDS = ("security", "hr", "pentest", "contract", "reorg", "breakglass")
"""Fact kinds only a restricted document states: only permission questions ask for them."""


class QuestionSet:
    """Questions over a `World`, in display order with IDs, splits and distractor pools."""

    def __init__(self, world: World, rng: random.Random):
        self.w = world
        self.rng = rng
        self.questions: list[Question] = []
        self.texts = prose("questions")

    def build(self) -> list[Question]:
        self._lookups(55)
        self._multi(65)
        self._near_duplicates()
        self._outdated()
        self._conflicting()
        self._unanswerable(22)
        self._permission()
        self._finish()
        return self.questions

    def _fact_question(self, fact: Fact, qtype: str, *, extra_tags: Sequence[str] = ()) -> Question:
        grades = {fact.docs[0]: 2} | {d: 1 for d in fact.docs[1:]}
        traps = list(self.w.traps.get(fact.key, ()))
        for trap in traps:
            grades.setdefault(trap.doc, 0)
        q = Question(fact.question, qtype, tuple(dict.fromkeys(fact.tags + tuple(extra_tags))), fact.critical,
                     grades, {fact.key: (fact.text, fact.docs)}, traps)
        q.disputed = self.w.disputes.get(fact.key)
        return q

    def _uncontested(self) -> list[Fact]:
        return [f for f in self.w.facts.values() if not f.contested and f.kind not in RESTRICTED_KINDS]

    def _lookups(self, n: int) -> None:
        facts = self._uncontested()
        picked = self.rng.sample(facts, n)
        for fact in picked:
            q = self._fact_question(fact, "lookup")
            service = next((s for s in self.w.services if s.name == fact.subject), None)
            if service and fact.docs[0] != service.docs["overview"] and self.rng.random() < 0.3:
                q.grades[service.docs["overview"]] = 1   # background: names the service and points to its runbooks
            self.questions.append(q)

    def _multi(self, n: int) -> None:
        rng = self.rng
        combos: list[tuple[Fact, ...]] = []
        pairs = (("owner", "fo-region"), ("alert", "fo-rto"), ("owner", "third-a"), ("dashboard", "third-b"),
                 ("feature0", "feature1"), ("tier", "fo-rpo"), ("alert", "third-a"), ("owner", "feature1"),
                 ("fo-lag", "third-b"), ("dashboard", "fo-ttl"), ("owner", "removal"))
        triples = (("owner", "fo-region", "third-a"), ("alert", "fo-rto", "feature1"), ("tier", "third-b", "feature0"))
        for s in self.w.services:
            for kinds in pairs + triples:
                facts = tuple(s.facts[k] for k in kinds)
                if not any(f.contested for f in facts) and len({f.docs[0] for f in facts}) == len(facts):
                    combos.append(facts)
        policy = [f for f in self._uncontested() if f.subject == "" and "policy" in f.tags]
        oncall = [f for f in self._uncontested() if f.subject == "" and "oncall" in f.tags]
        for group in (policy, oncall, policy + oncall):
            for _ in range(6):
                a, b = rng.sample(group, 2)
                if a.docs[0] != b.docs[0]:
                    combos.append((a, b))
        for _ in range(6):
            a, b = rng.sample(self.w.services, 2)
            if not a.facts["owner"].contested and not b.facts["owner"].contested:
                combos.append((a.facts["owner"], b.facts["owner"]))
        for pm in self.w.postmortems:
            s = pm["service"]
            cause = pm["facts"]["cause"]
            combos.append((cause, s.facts["owner"]) if not s.facts["owner"].contested else (cause, s.facts["alert"]))
        unique = list({tuple(f.key for f in c): c for c in combos}.values())
        for facts in rng.sample(unique, n):
            clauses = []
            for i, fact in enumerate(facts):
                same = i > 0 and fact.subject and fact.subject == facts[0].subject
                clauses.append(fact.clause.replace("{s}", "it" if same else fact.subject)
                               .replace("{p}", "its" if same else f"{fact.subject}'s"))
            first = clauses[0][0].upper() + clauses[0][1:]
            text = first + "?" if len(clauses) == 1 else (
                f"{first}, and {clauses[1]}?" if len(clauses) == 2 else f"{first}, {clauses[1]}, and {clauses[2]}?")
            grades: dict[str, int] = {}
            claims: dict[str, tuple[str, tuple[str, ...]]] = {}
            tags: list[str] = []
            for fact in facts:
                grades.setdefault(fact.docs[0], 2)
                for d in fact.docs[1:]:
                    grades.setdefault(d, 1)
                claims[fact.key] = (fact.text, fact.docs)
                tags += fact.tags
            q = Question(text, "multi-evidence", tuple(dict.fromkeys(tags)), any(f.critical for f in facts),
                         grades, claims)
            self.questions.append(q)
        triple = next(q for q in self.questions if q.type == "multi-evidence" and len(q.claims) == 3)
        triple.disputed = self.texts["disputed"]["multi_evidence_triple"]

    def _near_duplicates(self) -> None:
        rng = self.rng
        for s in self.w.services:
            if "staging" in s.docs:
                for kind in rng.sample(("rb-cmd", "rb-trigger", "rb-smoke", "rb-duration"), 2):
                    q = self._fact_question(s.facts[kind], "near-duplicate", extra_tags=("near-duplicate",))
                    self.questions.append(q)
            if "rc" in s.docs:
                for kind in ("default-on", "removal"):
                    self.questions.append(self._fact_question(s.facts[kind], "near-duplicate",
                                                              extra_tags=("near-duplicate",)))
            if "failover-draft" in s.docs:
                for kind in ("fo-region", "fo-rto"):
                    self.questions.append(self._fact_question(s.facts[kind], "near-duplicate",
                                                              extra_tags=("near-duplicate",)))
        wiki = next(q for q in self.questions if q.type == "near-duplicate" and
                    any(d.startswith("wk-") for d in q.grades))
        wiki.disputed = self.texts["disputed"]["wiki_copy"]

    def _outdated(self) -> None:
        w = self.w
        policy = [f for f in w.facts.values() if f.subject == "" and "policy" in f.tags and f.contested
                  and f.key in w.traps and f.key != "retention-exports"]
        for fact in policy:
            self.questions.append(self._fact_question(fact, "outdated", extra_tags=("superseded",)))
        self.questions.append(self._fact_question(w.facts["retention-exports"], "outdated", extra_tags=("superseded",)))
        for s in w.services:
            if "rollback-old" in s.docs:
                self.questions.append(self._fact_question(s.facts["rb-cmd"], "outdated", extra_tags=("superseded",)))
            if "failover-old" in s.docs:
                self.questions.append(self._fact_question(s.facts["fo-region"], "outdated", extra_tags=("superseded",)))
        chain = [s for s in w.services if "rollback-old" in s.docs][:2]
        for s in chain:
            self.questions.append(self._fact_question(s.facts["rb-trigger"], "outdated", extra_tags=("superseded",)))
        for s in self.rng.sample(w.services, 7):
            self.questions.append(self._fact_question(s.facts["timeout"], "outdated", extra_tags=("configuration",)))

    def _conflicting(self) -> None:
        w, rng = self.w, self.rng
        hb = w.handbook
        by_team: dict[str, list[Service]] = {}
        for s in w.services:
            by_team.setdefault(s.team, []).append(s)
        asks, note_text = self.texts["asks"], self.texts["team_page_note"]
        for n, (team, kind, page, wrong) in enumerate(w.team_conflicts):
            fact = w.oncall_facts[kind]
            services = by_team.get(team, [])
            texts = [fill(asks[kind][0], team=team)]
            if services:
                texts.append(fill(asks[kind][1], svc=rng.choice(services).name))
            for i, text in enumerate(texts):
                q = Question(text, "conflicting", ("oncall", team.lower(), "team-page"), fact.critical,
                             {hb: 2, page: 0}, {fact.key: (fact.text, (hb,))},
                             [Trap(fact.key, page, f"{fact.key}-{team.lower()}", wrong)])
                if i == 0 and n % 2 == 0:
                    note = fill(note_text["key"], channel=team.lower())
                    q.grades[page] = 1
                    q.claims[note] = (fill(note_text["text"], team=team), (page,))
                    q.note = note
                self.questions.append(q)
        self._freeze_approvers()
        for i, pm in enumerate(p for p in w.postmortems if "status" in p):
            fact = pm["facts"]["duration"]
            q = self._fact_question(fact, "conflicting", extra_tags=("status-page",))
            if i == 0:
                q.disputed = self.texts["disputed"]["status_page"]
            self.questions.append(q)
        for i, (s, team, page) in enumerate(w.owner_conflicts):
            q = self._fact_question(s.facts["owner"], "conflicting", extra_tags=("team-page",))
            if i == 0:
                q.disputed = fill(self.texts["disputed"]["team_page_owner"], team=team)
            self.questions.append(q)

    def _freeze_approvers(self) -> None:
        """Who approves a rollback during the freeze: the policy says, and the service's runbook (and wiki
        copy) are edited to name the release manager, as old copies of them did."""
        w, texts = self.w, self.texts["freeze_approver"]
        approval = prose("services")["rollback"]["approval"]
        freeze = w.freeze_doc
        for s in self.rng.sample(w.services, 5):
            values = s.values() | {"who": texts["who"][str(s.tier)]}
            key = fill(texts["key"], **values)
            rb = w.docs[s.docs["rollback"]]
            rb.text = rb.text.replace(approval, texts["runbook"])
            traps = [Trap(key, s.docs["rollback"], f"{key}-alt", fill(texts["wrong"], **values))]
            grades = {freeze: 2, s.docs["rollback"]: 0}
            if "wiki" in s.docs:
                wk = w.docs[s.docs["wiki"]]
                wk.text = wk.text.replace(approval, texts["wiki_copy"])
                traps.append(Trap(key, s.docs["wiki"], f"{key}-wiki", traps[0].wrong_text))
                grades[s.docs["wiki"]] = 0
            q = Question(fill(texts["question"], **values), "conflicting", (s.code, "change-freeze", "rollback"), True,
                         grades, {key: (fill(texts["text"], **values), (freeze,))}, traps)
            self.questions.append(q)

    def _unanswerable(self, n: int) -> None:
        rng, templates = self.rng, self.texts["unanswerable"]
        combos = [(t, s) for t in range(len(templates)) for s in range(len(self.w.services))]
        for t, si in sorted(rng.sample(combos, n)):
            spec = templates[t]
            s = self.w.services[si]
            fmt = dict(name=s.name, standby=s.standby, team=s.team)
            q = Question(fill(spec["question"], **fmt), "unanswerable", (s.code,), False, {}, {})
            q.lure = (s.docs[spec["from"]], f"{s.code}-{spec['slug']}", fill(spec["lure"], **fmt))
            if spec["slug"] == "backup-region" and not any(x.disputed for x in self.questions
                                                           if x.type == "unanswerable"):
                q.disputed = self.texts["disputed"]["backup_region"]
            self.questions.append(q)

    def _permission(self) -> None:
        w = self.w
        eng = ("engineering",)
        for n, inc in enumerate(w.security):
            a, b, c = inc["facts"]
            for fact in (a, b):
                q = Question(fact.question, "permission", ("security", "incident"), False, {inc["pub"]: 2, inc["sec"]: 0},
                             {fact.key: (fact.text, fact.docs)}, caller=eng, restricted=inc["sec"])
                if n == 0 and fact is a:
                    q.disputed = self.texts["disputed"]["security_summary"]
                self.questions.append(q)
            self.questions.append(Question(c.question, "permission", ("security", "incident", "restricted"), True,
                                           {inc["sec"]: 0}, {}, caller=eng, restricted=inc["sec"]))
            self.questions.append(Question(c.question, "permission", ("security", "incident"), True, {inc["sec"]: 2},
                                           {c.key: (c.text, c.docs)}, caller=("engineering", "security")))
        callers = (  # (denied, granted) per restricted fact, in `World.restricted_facts` order
            (("engineering",), ("hr", "people-managers")),
            (("engineering",), ("people-managers", "engineering")),
            (("engineering",), ("security",)),
            (("support",), ("finance",)),
            (("engineering",), ("leadership",)),
            (("engineering",), ("sre-leads", "engineering")),
        )
        for fact, (denied, granted) in zip(w.restricted_facts, callers, strict=True):
            doc = fact.docs[0]
            self.questions.append(Question(fact.question, "permission", fact.tags + ("restricted",), fact.critical,
                                           {doc: 0}, {}, caller=denied, restricted=doc))
            self.questions.append(Question(fact.question, "permission", fact.tags, fact.critical, {doc: 2},
                                           {fact.key: (fact.text, fact.docs)}, caller=granted))

    def _finish(self) -> None:
        """Distractor pools, lures, display order, IDs and a stratified dev / held-out split."""
        w, rng = self.w, self.rng
        public = [d for d, doc in w.docs.items() if not doc.access]
        for q in self.questions:
            labelled = set(q.grades)
            topics = [t for t in q.tags if t in w.topics]
            near: list[str] = []
            for t in topics:
                near += [d for d in w.topics[t] if d not in labelled and d not in near]
            rng.shuffle(near)
            far = [d for d in public if d not in labelled and d not in near]
            q.pool = near[:8] + rng.sample(far, 12)
            if q.lure is not None:
                q.pool = [q.lure[0]] + [d for d in q.pool if d != q.lure[0]]
        rng.shuffle(self.questions)
        by_type: dict[str, list[Question]] = {}
        for i, q in enumerate(self.questions, 1):
            q.id = f"q-{i:04d}"
            by_type.setdefault(q.type, []).append(q)
        for qs in by_type.values():
            order = list(qs)
            rng.shuffle(order)
            for j, q in enumerate(order):
                q.split = "dev" if j < round(0.6 * len(order)) else "heldout"
