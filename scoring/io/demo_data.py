"""The demo workspace: a fictional freight company's runbooks, policies, release notes, on-call
pages and postmortems, a reviewed test set over them, and eight recorded runs that tell one
release story, one chunking experiment and one free-text answer format.

`generate_demo(out)` writes the whole workspace (``suites/demo/``, ``runs/<run_id>/``,
``policy.toml``) from a fixed seed with the standard library only: no clock, no environment, no
network, so the same seed always gives the same bytes. Regenerate the committed copy with
``python -m scoring.io.demo_data --out data/demo``.

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
report that states the answer took the place of a graded page (`plant_label_gap`); grading it
turns the regression into a tie. Two reviewers' decisions come with the suite (``reviews/``): six
grades of documents the reranker brought in, one disagreement between them and one disputed
question (`demo_reviews`).

``prod-text`` is production again with the free-text answer prompt: the same answers, written as
sentences citing indexes into the retrieved list (the TREC RAG format), which refresh aligns to the
expected claims. The suite declares a judge (``judges.toml``, the small program
``judges/checker.py``, its answers cached in ``judgements/checker.jsonl``), and amara and kofi
reviewed 42 of the sentences (`alignment_reviews`): the sample exposes the lexical aligner reading
refusals as claims and superseded or staging values as the current claim, and the judge keeping
only the second mistake.

Nothing here is a measurement of a real system: the records are simulated from per-slice
probabilities (`BEHAVIOURS`), with draws shared across configurations and spread evenly over each
question type, so that the averages favour the reranker while the slices show why it should not
ship as it is.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

SEED = 20261101
SUITE = "demo"
SUITE_VERSION = "2026.11"
CORPUS_VERSION = "corpus-2026-11-01"
RUBRIC_VERSION = "rubric-3"
MAX_CLAIMS = 5
"""The most claims a demo answer may make (its answers make at most 4): what pooled Support charges a
failed or missing record."""
K = 5
RETURNED = 10
CONTEXT_SEPARATOR = "\n\n"
"""A record's `context` is the texts of its first k retrieved documents (or chunks) joined by this."""
CHUNK_CHARS = 160
"""The chunked run's chunk size: whole sentences, at most this many characters (a longer sentence is a
chunk of its own)."""

# --- the fictional company ------------------------------------------------------------------------

SERVICES = (
    # code, name, what it does, tier, three features (one per release), deprecated endpoint
    ("ledger", "Ledger", "records invoices, credits and customer balances", 1,
     ("idempotency keys on invoice creation", "multi-currency rounding rules",
      "a dry-run mode for bulk credit notes"), "/v1/balances"),
    ("dispatch", "Dispatch", "assigns shipments to carriers and plans pickup routes", 1,
     ("carrier capacity hints", "a bulk cancel endpoint for pickups", "route re-planning when a carrier refuses"),
     "/v1/assignments"),
    ("tracker", "Tracker", "serves the public shipment-tracking API used by customers and partners", 1,
     ("ETag support for conditional requests", "cursor-based pagination of tracking events",
      "partial responses through the fields parameter"), "/v1/track"),
    ("gateway", "Gateway", "terminates TLS at the edge and routes partner API traffic", 1,
     ("per-route circuit breakers", "HTTP/2 connections to upstream services", "per-tenant rate limits"),
     "/v1/keys"),
    ("notify", "Notify", "sends email, SMS and webhook notifications", 2,
     ("delivery receipts for SMS", "signed webhooks with signature version 2", "per-customer quiet hours"),
     "/v1/send"),
    ("identity", "Identity", "provides single sign-on, API keys and service tokens", 1,
     ("SAML metadata refresh without restarts", "service tokens scoped to one environment",
      "an audit trail for API key creation"), "/v1/tokens"),
    ("pricing", "Pricing", "computes freight quotes, fuel surcharges and discounts", 2,
     ("fuel surcharge tables per lane", "quote explanations in the API response", "a canary mode for tariff changes"),
     "/v1/quote"),
    ("stocksync", "Stocksync", "synchronises stock levels with partner warehouses", 2,
     ("warehouse cut-off times per partner", "configurable batch sizes for partner syncs",
      "replay of the dead-letter queue"), "/v1/stock"),
    ("reports", "Reports", "builds nightly and on-demand customer reports", 2,
     ("asynchronous report generation with callbacks", "Parquet exports", "report templates shared across a customer"),
     "/v1/reports"),
    ("scheduler", "Scheduler", "runs recurring jobs for every other service", 2,
     ("job priorities", "time-zone-aware schedules", "a pause switch for every job"), "/v1/jobs"),
)
TEAMS = ("Aurora", "Basalt", "Cobalt", "Driftwood", "Ember", "Fjord", "Garnet")
LEADS = ("Ines Varga", "Tomasz Brandt", "Amara Lindqvist", "Kofi Mensah", "Yuki Calder", "Rosa Ferreira",
         "Anselm Okoro")
REGIONS = ("harbor-east", "harbor-west", "fjord-north", "delta-south", "delta-north")
FIXES = (
    "a race that could send a duplicate event during failover",
    "a memory leak in the metrics exporter",
    "log lines that were written twice after a config reload",
    "a slow start-up when the service discovery cache was empty",
    "health checks that reported ready before migrations finished",
    "a crash when a request carried an empty tenant header",
    "timestamps that were rendered in local time instead of UTC",
    "retries that ignored the Retry-After header",
)
UPGRADES = (
    "No action is needed.",
    "Restart the workers after the schema migration completes.",
    "Clients should send the new X-Request-Id header; it becomes mandatory in the next release.",
    "The migration runs online and takes a few minutes on the largest tenants.",
    "Dashboards that used the old metric names must be updated.",
)
INCIDENTS = (
    # title, what happened, cause (short, for the proposition), cause (long), action item
    ("expired TLS certificate", "clients calling {name} failed their TLS handshakes",
     "an expired TLS certificate whose renewal job had been disabled during a cluster migration",
     "the certificate for {code}.halyard.example expired because its renewal job had been disabled during a "
     "cluster migration and never re-enabled", "alert when any certificate is within 14 days of expiry"),
    ("connection pool exhaustion", "{name} requests queued and timed out",
     "a slow report query that held database connections until the pool was exhausted",
     "a report query without an index held database connections for minutes until the pool of {pool} "
     "connections was exhausted", "add a 5-second statement timeout and the missing index"),
    ("bad configuration push", "every {name} request was rejected with HTTP 502",
     "a hand-applied configuration change that set the upstream timeout to 0 seconds",
     "a configuration change set the upstream timeout to 0 seconds; it skipped validation because it was "
     "applied by hand", "validate every configuration change in CI and reject hand-applied changes"),
    ("queue backlog", "{name} processed messages hours late",
     "a consumer release that halved throughput by switching to one-message batches",
     "a consumer release halved throughput by switching from 50-message batches to one-message batches",
     "add a throughput check to the consumer canary"),
    ("DNS misconfiguration", "part of {name}'s traffic kept going to a drained region",
     "a DNS record with a 24-hour TTL that outlived a failover",
     "a DNS record for {code}.halyard.example carried a 24-hour TTL and kept clients on the drained region "
     "long after the failover", "cap DNS TTLs for service records at 300 seconds"),
    ("full data volume", "{name} stopped accepting writes",
     "debug logging left on after an investigation, which filled the data volume",
     "debug logging was left on after an investigation and filled the data volume in about six hours",
     "make debug logging switch itself off after 24 hours"),
    ("blocking schema migration", "{name} writes were blocked",
     "a schema migration that built an index without the concurrent option and locked the main table",
     "a schema migration built an index without the concurrent option and locked the main table for "
     "{lock} minutes", "run every migration through the online-migration tool"),
    ("retry storm", "{name} load tripled and latency climbed",
     "clients that retried immediately, without backoff, after a short network blip",
     "clients retried failed calls immediately and without backoff after a 40-second network blip, "
     "tripling the load", "ship client retries with exponential backoff and jitter"),
)
THIRD_KINDS = ("disk", "certs", "queue", "cache")


# --- the model of the corpus and the test set ---------------------------------------------------


@dataclass
class Doc:
    """One document of the corpus."""

    id: str
    title: str
    text: str
    version: str | None = None
    access: tuple[str, ...] = ()

    def row(self) -> dict[str, object]:
        row: dict[str, object] = {"id": self.id, "title": self.title, "text": self.text}
        if self.version is not None:
            row["version"] = self.version
        if self.access:
            row["access"] = list(self.access)
        return row


@dataclass
class Fact:
    """A reviewed proposition, the documents that state it and the ways a question asks for it.

    `clause` asks for the fact inside a longer question; ``{s}`` is its subject and ``{p}`` its
    possessive (the service name the first time, "it" and "its" afterwards). `docs` lists the
    supporting documents, primary first.
    """

    key: str
    kind: str
    text: str
    question: str
    clause: str
    subject: str
    docs: tuple[str, ...]
    tags: tuple[str, ...]
    critical: bool = False
    contested: bool = False


@dataclass
class Trap:
    """A passage that states a different value for an expected claim: superseded, a staging or
    draft twin, or a non-authoritative page. An answer that follows it makes `wrong_id`."""

    claim: str
    doc: str
    wrong_id: str
    wrong_text: str


@dataclass
class Question:
    """One test question with its labels and what the simulated systems may get wrong."""

    text: str
    type: str
    tags: tuple[str, ...]
    critical: bool
    grades: dict[str, int]
    claims: dict[str, tuple[str, tuple[str, ...]]]
    traps: list[Trap] = field(default_factory=list)
    note: str | None = None
    caller: tuple[str, ...] | None = None
    disputed: str | None = None
    lure: tuple[str, str, str] | None = None
    restricted: str | None = None
    pool: list[str] = field(default_factory=list)
    id: str = ""
    split: str = "dev"

    def row(self) -> dict[str, object]:
        row: dict[str, object] = {
            "id": self.id, "text": self.text, "type": self.type, "split": self.split,
            "critical": self.critical, "tags": list(self.tags),
        }
        if self.caller is not None:
            row["caller"] = list(self.caller)
        row["relevant"] = dict(self.grades)
        row["support"] = {c: list(docs) for c, (_, docs) in self.claims.items()}
        row["claims"] = {c: text for c, (text, _) in self.claims.items()}
        if self.disputed:
            row["disputed"] = self.disputed
        return row

    @property
    def answerable(self) -> bool:
        return any(g > 0 for g in self.grades.values())


@dataclass
class Service:
    code: str
    name: str
    desc: str
    tier: int
    features: tuple[str, str, str]
    endpoint: str
    team: str = ""
    region: str = ""
    standby: str = ""
    rto: int = 0
    rpo: int = 0
    ttl: int = 0
    lag: int = 0
    err: float = 0.0
    err_minutes: int = 0
    duration: int = 0
    alert: str = ""
    dashboard: str = ""
    major: int = 0
    minor: int = 0
    dates: tuple[str, str, str] = ("", "", "")
    timeouts: tuple[int, int, int] = (0, 0, 0)
    third: str = ""
    removal: str = ""
    docs: dict[str, str] = field(default_factory=dict)
    facts: dict[str, Fact] = field(default_factory=dict)

    def version(self, i: int) -> str:
        return f"{self.major}.{self.minor + i}"


def _date(rng: random.Random, year: int, months: tuple[int, int]) -> str:
    return f"{year}-{rng.randint(*months):02d}-{rng.randint(1, 28):02d}"


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


class World:
    """The corpus and its facts, built in one fixed order from one random stream."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.docs: dict[str, Doc] = {}
        self.facts: dict[str, Fact] = {}
        self.topics: dict[str, list[str]] = {}
        self._counters: dict[str, int] = {}
        self.services: list[Service] = []
        self.traps: dict[str, list[Trap]] = {}
        self.disputes: dict[str, str] = {}
        # what the test set needs to know about particular documents and facts
        self.freeze_doc = ""
        self.handbook = ""
        self.oncall_facts: dict[str, Fact] = {}
        self.team_conflicts: list[tuple[str, str, str, str]] = []
        self.owner_conflicts: list[tuple[Service, str, str]] = []
        self.postmortems: list[dict[str, object]] = []
        self.security: list[dict[str, object]] = []
        self.restricted_facts: list[Fact] = []
        self.label_gap = ""
        """The question whose regression under the reranker is a label gap (`plant_label_gap`)."""

    # building blocks

    def doc(self, prefix: str, title: str, text: str, *, topics: Sequence[str], version: str | None = None,
            access: Sequence[str] = ()) -> str:
        self._counters[prefix] = self._counters.get(prefix, 0) + 1
        doc_id = f"{prefix}-{self._counters[prefix]:04d}"
        self.docs[doc_id] = Doc(doc_id, title, text, version, tuple(access))
        if not access:
            for topic in topics:
                self.topics.setdefault(topic, []).append(doc_id)
        return doc_id

    def fact(self, key: str, kind: str, text: str, question: str, clause: str, subject: str,
             docs: Sequence[str], tags: Sequence[str], *, critical: bool = False) -> Fact:
        if key in self.facts:
            raise ValueError(f"duplicate fact key {key!r}")
        fact = Fact(key, kind, text, question, clause, subject, tuple(docs), tuple(tags), critical)
        self.facts[key] = fact
        return fact

    def trap(self, fact: Fact, doc: str, suffix: str, wrong_text: str) -> None:
        fact.contested = True
        self.traps.setdefault(fact.key, []).append(Trap(fact.key, doc, f"{fact.key}-{suffix}", wrong_text))

    # the corpus

    def build(self) -> None:
        self._services()
        for s in self.services:
            self._overview(s)
        for s in self.services:
            self._rollback(s)
            self._failover(s)
            self._third(s)
            self._release_notes(s)
        self._variants()
        self._policies()
        self._oncall()
        self._postmortems()
        self._restricted()

    def _services(self) -> None:
        rng = self.rng
        owners = list(TEAMS) + [rng.choice(TEAMS) for _ in range(len(SERVICES) - len(TEAMS))]
        rng.shuffle(owners)
        for (code, name, desc, tier, features, endpoint), team in zip(SERVICES, owners):
            region, standby = rng.sample(REGIONS, 2)
            major, minor = rng.randint(2, 7), rng.randint(0, 6)
            t0 = rng.choice((20, 30, 30, 60))
            t1 = t0 + rng.choice((10, 15, 30))
            t2 = t1 + rng.choice((5, 15, 30))
            s = Service(
                code, name, desc, tier, features, endpoint, team=team, region=region, standby=standby,
                rto=rng.choice((15, 20, 30) if tier == 1 else (30, 45, 60)),
                rpo=rng.choice((5, 5, 10, 15)),
                ttl=rng.choice((30, 60, 60, 120)),
                lag=rng.choice((2, 5, 10)),
                err=rng.choice((0.5, 1, 2, 5)),
                err_minutes=rng.choice((3, 5, 10)),
                duration=rng.choice((8, 10, 12, 15, 20)),
                alert=f"{name}{rng.choice(('ErrorBudgetBurn', 'HighErrorRate', 'LatencyP99High', 'AvailabilityLow'))}",
                dashboard=f"{code}-{rng.choice(('overview', 'health', 'golden-signals'))}",
                major=major, minor=minor,
                dates=(_date(rng, 2026, (2, 4)), _date(rng, 2026, (5, 7)), _date(rng, 2026, (8, 10))),
                timeouts=(t0, t1, t2),
                third=THIRD_KINDS[len(self.services) % len(THIRD_KINDS)],
                removal=f"{major}.{minor + 4}",
            )
            self.services.append(s)

    def _overview(self, s: Service) -> None:
        rotation = f"{s.code}-primary"
        if self.rng.random() < 0.5:
            text = (
                f"{s.name} {s.desc}. It is a tier-{s.tier} service owned by the {s.team} team; pages go to the "
                f"`{rotation}` rotation in Beacon. Its health is tracked on the `{s.dashboard}` dashboard in "
                f"Lantern, and the paging alert is `{s.alert}`. {s.name} serves traffic from {s.region}. For "
                f"deploys, rollbacks and failover, follow the {s.name} runbooks."
            )
        else:
            text = (
                f"What it does: {s.name} {s.desc}.\nOwnership: the {s.team} team owns {s.name}, a tier-{s.tier} "
                f"service.\nOn call: the `{rotation}` rotation in Beacon receives its pages.\nSignals: `{s.alert}` "
                f"is the paging alert; open `{s.dashboard}` in Lantern first.\nHosting: primary region {s.region}."
            )
        doc = self.doc("ov", f"Service catalog: {s.name}", text, topics=(s.code,))
        s.docs["overview"] = doc
        tags = (s.code, "service-catalog")
        f = self.fact
        s.facts["owner"] = f(f"{s.code}-owner", "owner", f"{s.name} is owned by the {s.team} team.",
                             f"Which team owns {s.name}?", "which team owns {s}", s.name, [doc], tags + ("ownership",))
        s.facts["tier"] = f(f"{s.code}-tier", "tier", f"{s.name} is a tier-{s.tier} service.",
                            f"What service tier is {s.name}?", "what service tier is {s}", s.name, [doc],
                            tags + ("tiering",))
        s.facts["alert"] = f(f"{s.code}-alert", "alert", f"The paging alert for {s.name} is `{s.alert}`.",
                             f"Which alert pages the on-call engineer for {s.name}?",
                             "which alert pages the on-call engineer for {s}",
                             s.name, [doc], tags + ("alerting",))
        s.facts["dashboard"] = f(f"{s.code}-dashboard", "dashboard",
                                 f"The first dashboard to open for {s.name} is `{s.dashboard}` in Lantern.",
                                 f"Which Lantern dashboard should I open first for {s.name}?",
                                 "which Lantern dashboard should be opened first for {s}", s.name, [doc],
                                 tags + ("dashboards",))

    def _rollback_text(self, s: Service, *, env: str, err: float, minutes: int, duration: int, command: str,
                       smoke: str, approval: str) -> str:
        if self.rng.random() < 0.5:
            return (
                f"Roll back when the {s.name} error rate stays above {err}% for {minutes} minutes after a deploy "
                f"to {env}, or when the on-call engineer sees data being written incorrectly.\n"
                f"1. Announce the rollback in #inc-{s.code} and link the deploy.\n"
                f"2. Run `{command}`. It redeploys the last release that passed its smoke suite.\n"
                f"3. Run the `{smoke}` smoke suite and wait for it to pass before closing the incident.\n"
                f"4. {approval}\n"
                f"A {s.name} rollback in {env} usually takes about {duration} minutes from step 2 to a green smoke suite."
            )
        return (
            f"This runbook covers rolling back a bad {s.name} release in {env}. The trigger is an error rate "
            f"above {err}% sustained for {minutes} minutes after a deploy. To roll back, run `{command}`; "
            f"shipctl picks the last release that passed its smoke suite. Then run `{smoke}` and keep the "
            f"incident open until it passes. {approval} Expect the whole rollback to take about {duration} minutes."
        )

    def _rollback(self, s: Service) -> None:
        command = f"shipctl rollback {s.code} --to previous"
        smoke = f"smoke-{s.code}-core"
        approval = "During a change freeze, approvals follow the change freeze policy."
        text = self._rollback_text(s, env="production", err=s.err, minutes=s.err_minutes, duration=s.duration,
                                   command=command, smoke=smoke, approval=approval)
        doc = self.doc("rb", f"Runbook: roll back {s.name}", text, topics=(s.code, "rollback"), version="v2")
        s.docs["rollback"] = doc
        tags = (s.code, "runbook", "rollback")
        f = self.fact
        s.facts["rb-cmd"] = f(f"{s.code}-rollback-cmd", "rb-cmd", f"{s.name} is rolled back with `{command}`.",
                              f"Which command rolls back {s.name} in production?", "which command rolls back {s}",
                              s.name, [doc], tags, critical=True)
        s.facts["rb-trigger"] = f(
            f"{s.code}-rollback-trigger", "rb-trigger",
            f"A {s.name} deploy is rolled back when the error rate stays above {s.err}% for {s.err_minutes} minutes.",
            f"When should a production deploy of {s.name} be rolled back?",
            "when should a deploy of {s} be rolled back", s.name, [doc], tags, critical=True)
        s.facts["rb-smoke"] = f(f"{s.code}-rollback-smoke", "rb-smoke",
                                f"After a {s.name} rollback, the `{smoke}` smoke suite must pass.",
                                f"Which smoke suite must pass after a {s.name} rollback?",
                                "which smoke suite must pass after rolling back {s}", s.name, [doc], tags)
        s.facts["rb-duration"] = f(f"{s.code}-rollback-time", "rb-duration",
                                   f"A {s.name} rollback usually takes about {s.duration} minutes.",
                                   f"How long does a {s.name} rollback usually take?",
                                   "how long does rolling back {s} usually take", s.name, [doc], tags)

    def _failover(self, s: Service) -> None:
        if self.rng.random() < 0.5:
            text = (
                f"{s.name} runs in {s.region} with a warm standby in {s.standby}. Only the incident commander may "
                f"declare a regional failover.\n"
                f"1. Lower the DNS TTL of {s.code}.halyard.example to {s.ttl} seconds and wait one TTL.\n"
                f"2. Run `shipctl failover {s.code} --to {s.standby}`.\n"
                f"3. Keep writes paused until replication lag is below {s.lag} seconds, then resume them.\n"
                f"Targets: recovery time objective (RTO) {s.rto} minutes; recovery point objective (RPO) {s.rpo} "
                f"minutes."
            )
        else:
            text = (
                f"When {s.region} cannot serve {s.name}, the incident commander may declare a regional failover to "
                f"the warm standby in {s.standby}; nobody else may. Before switching, lower the DNS TTL of "
                f"{s.code}.halyard.example to {s.ttl} seconds and wait for one TTL to pass. Then run "
                f"`shipctl failover {s.code} --to {s.standby}` and keep writes paused until replication lag is "
                f"below {s.lag} seconds. We aim to recover within {s.rto} minutes (RTO) and to lose at most "
                f"{s.rpo} minutes of writes (RPO)."
            )
        doc = self.doc("rb", f"Runbook: fail over {s.name}", text, topics=(s.code, "failover"), version="v3")
        s.docs["failover"] = doc
        tags = (s.code, "runbook", "failover")
        f = self.fact
        s.facts["fo-region"] = f(f"{s.code}-standby", "fo-region",
                                 f"{s.name} fails over to its warm standby in {s.standby}.",
                                 f"Which region does {s.name} fail over to?", "which region does {s} fail over to",
                                 s.name, [doc], tags, critical=True)
        s.facts["fo-cmd"] = f(f"{s.code}-failover-cmd", "fo-cmd",
                              f"{s.name} is failed over with `shipctl failover {s.code} --to {s.standby}`.",
                              f"Which command fails {s.name} over to its standby region?",
                              "which command fails {s} over", s.name, [doc], tags, critical=True)
        s.facts["fo-rto"] = f(f"{s.code}-rto", "fo-rto", f"The recovery time objective for {s.name} is {s.rto} minutes.",
                              f"What is the recovery time objective for {s.name}?", "what is {p} RTO", s.name,
                              [doc], tags, critical=True)
        s.facts["fo-rpo"] = f(f"{s.code}-rpo", "fo-rpo", f"The recovery point objective for {s.name} is {s.rpo} minutes.",
                              f"How much data loss does the {s.name} recovery point objective allow?",
                              "what is {p} RPO", s.name, [doc], tags, critical=True)
        s.facts["fo-ttl"] = f(f"{s.code}-failover-ttl", "fo-ttl",
                              f"Before a {s.name} failover, the DNS TTL is lowered to {s.ttl} seconds.",
                              f"What DNS TTL should be set before failing {s.name} over?",
                              "what DNS TTL should be set before failing {s} over", s.name, [doc], tags)
        s.facts["fo-lag"] = f(f"{s.code}-failover-lag", "fo-lag",
                              f"After a {s.name} failover, writes stay paused until replication lag is below "
                              f"{s.lag} seconds.",
                              f"When can writes resume after a {s.name} failover?",
                              "when can writes resume after failing {s} over", s.name, [doc], tags)

    def _third(self, s: Service) -> None:
        rng, f = self.rng, self.fact
        if s.third == "disk":
            pct = rng.choice((80, 85, 90))
            text = (
                f"The `{s.name}DiskFilling` alert fires when a {s.name} data volume passes {pct}% usage. First run "
                f"`shipctl exec {s.code} -- compact-logs` to reclaim space from rotated logs. If usage is still above "
                f"{pct}% after ten minutes, grow the volume with `shipctl volume grow {s.code} --by 50%` and open a "
                f"ticket for the {s.team} team."
            )
            doc = self.doc("rb", f"Runbook: {s.name} disk pressure", text, topics=(s.code, "disk"), version="v1")
            tags = (s.code, "runbook", "disk")
            s.facts["third-a"] = f(f"{s.code}-disk-threshold", "third-a",
                                   f"The {s.name} disk alert fires when a data volume passes {pct}% usage.",
                                   f"At what disk usage does the {s.name} disk alert fire?",
                                   "at what disk usage does {p} disk alert fire", s.name, [doc], tags)
            s.facts["third-b"] = f(f"{s.code}-disk-first-step", "third-b",
                                   f"The first step for {s.name} disk pressure is `shipctl exec {s.code} -- compact-logs`.",
                                   f"What is the first thing to run when a {s.name} data volume is filling up?",
                                   "what should be run first when {p} data volume fills up", s.name, [doc], tags)
        elif s.third == "certs":
            days, warn = rng.choice((30, 60, 90)), rng.choice((10, 14, 21))
            text = (
                f"Certificates for {s.name} are issued by the internal certificate authority and rotated every "
                f"{days} days with `shipctl certs rotate {s.code}`. The `{s.name}CertExpiry` warning fires {warn} days "
                f"before a certificate expires; treat it as a working-hours task unless fewer than 3 days remain."
            )
            doc = self.doc("rb", f"Runbook: rotate {s.name} certificates", text, topics=(s.code, "certificates"),
                           version="v2")
            tags = (s.code, "runbook", "certificates")
            s.facts["third-a"] = f(f"{s.code}-cert-rotation", "third-a",
                                   f"{s.name} certificates are rotated every {days} days.",
                                   f"How often are {s.name} certificates rotated?",
                                   "how often are {p} certificates rotated", s.name, [doc], tags)
            s.facts["third-b"] = f(f"{s.code}-cert-warning", "third-b",
                                   f"The {s.name} certificate expiry warning fires {warn} days before expiry.",
                                   f"How many days before expiry does the {s.name} certificate warning fire?",
                                   "how early does {p} certificate warning fire", s.name, [doc], tags)
        elif s.third == "queue":
            backlog, replicas = rng.choice((5000, 10000, 20000)), rng.choice((12, 16, 24))
            text = (
                f"When the {s.name} queue backlog exceeds {backlog} messages for ten minutes, scale the workers with "
                f"`shipctl scale {s.code}-worker --replicas N`. Never run more than {replicas} worker replicas: the "
                f"database connection pool is sized for that number. Watch the queue panel in Lantern to confirm the "
                f"backlog is draining."
            )
            doc = self.doc("rb", f"Runbook: {s.name} queue backlog", text, topics=(s.code, "queues"), version="v1")
            tags = (s.code, "runbook", "queues")
            s.facts["third-a"] = f(f"{s.code}-backlog-threshold", "third-a",
                                   f"{s.name} workers are scaled up when the backlog exceeds {backlog} messages for "
                                   f"ten minutes.",
                                   f"At what queue backlog should the {s.name} workers be scaled up?",
                                   "at what backlog should {p} workers be scaled up", s.name, [doc], tags)
            s.facts["third-b"] = f(f"{s.code}-max-replicas", "third-b",
                                   f"{s.name} must never run more than {replicas} worker replicas.",
                                   f"What is the maximum number of {s.name} worker replicas?",
                                   "how many worker replicas may {s} run at most", s.name, [doc], tags)
        else:
            minutes = rng.choice((5, 10, 15))
            text = (
                f"Flush the {s.name} cache with `shipctl exec {s.code} -- cache flush` only when stale entries are "
                f"confirmed. Expect the hit rate to recover within {minutes} minutes; if it does not, look for an "
                f"eviction storm in Lantern and page the {s.team} team."
            )
            doc = self.doc("rb", f"Runbook: flush the {s.name} cache", text, topics=(s.code, "cache"), version="v1")
            tags = (s.code, "runbook", "cache")
            s.facts["third-a"] = f(f"{s.code}-cache-flush", "third-a",
                                   f"The {s.name} cache is flushed with `shipctl exec {s.code} -- cache flush`.",
                                   f"How do I flush the {s.name} cache?", "how is {p} cache flushed", s.name,
                                   [doc], tags)
            s.facts["third-b"] = f(f"{s.code}-cache-recovery", "third-b",
                                   f"After a {s.name} cache flush, the hit rate should recover within {minutes} minutes.",
                                   f"How quickly should the {s.name} cache hit rate recover after a flush?",
                                   "how quickly should {p} cache hit rate recover after a flush", s.name, [doc], tags)
        s.docs["third"] = doc

    def _release_notes(self, s: Service) -> None:
        rng, f = self.rng, self.fact
        t0, t1, t2 = s.timeouts
        fixes = rng.sample(FIXES, 3)
        for i in range(3):
            ver, date = s.version(i), s.dates[i]
            lines = [f"{s.name} {ver}, released {date}.", f"New: {s.features[i]}."]
            if i == 1:
                lines.append(f"Changed: the default upstream request timeout is now {t1} seconds (previously {t0}).")
            if i == 2:
                lines.append(f"Changed: the default upstream request timeout is now {t2} seconds (previously {t1}).")
                lines.append(f"Deprecated: the `{s.endpoint}` endpoint. It will be removed in {s.name} {s.removal}; "
                             f"use the v2 endpoint instead.")
                lines.append(f"This release enables {s.features[2]} by default.")
            lines.append(f"Fixed: {fixes[i]}.")
            lines.append(f"Upgrade notes: {rng.choice(UPGRADES)}")
            doc = self.doc("rn", f"{s.name} {ver} release notes", "\n".join(lines), topics=(s.code, "release-notes"),
                           version=ver)
            s.docs[f"rn{i}"] = doc
        tags = (s.code, "release-notes")
        for i in range(2):
            s.facts[f"feature{i}"] = f(
                f"{s.code}-feature-{s.version(i).replace('.', '-')}", f"feature{i}",
                f"{s.name} {s.version(i)} added {s.features[i]}.",
                f"Which {s.name} release added {s.features[i]}?",
                f"which release of {s.name} added {s.features[i]}", s.name, [s.docs[f"rn{i}"]], tags)
        s.facts["default-on"] = f(
            f"{s.code}-default-on", "default-on",
            f"{s.name} {s.version(2)} enables {s.features[2]} by default.",
            f"Does {s.name} {s.version(2)} enable {s.features[2]} by default?",
            f"does {s.name} {s.version(2)} enable {s.features[2]} by default", s.name, [s.docs["rn2"]], tags)
        s.facts["removal"] = f(
            f"{s.code}-removal", "removal",
            f"The `{s.endpoint}` endpoint of {s.name} will be removed in {s.name} {s.removal}.",
            f"In which release will the `{s.endpoint}` endpoint of {s.name} be removed?",
            f"in which release will the `{s.endpoint}` endpoint of {s.name} be removed", s.name, [s.docs["rn2"]],
            tags + ("deprecation",))
        s.facts["timeout"] = f(
            f"{s.code}-timeout", "timeout",
            f"The default upstream request timeout in {s.name} is {t2} seconds.",
            f"What is the default upstream request timeout in {s.name}?",
            "what is the default upstream request timeout in {s}", s.name, [s.docs["rn2"]], tags + ("configuration",))
        # The 2nd note's "now t1 seconds" is outdated for every service: the 3rd note changed it again.
        self.trap(s.facts["timeout"], s.docs["rn1"], "old",
                  f"The default upstream request timeout in {s.name} is {t1} seconds.")

    def _variants(self) -> None:
        """Near-duplicates (wiki copies, staging twins, release candidates, drafts) and superseded versions."""
        rng = self.rng
        order = list(self.services)
        rng.shuffle(order)
        near_rollback, old_rollback = order[:6], order[6:]
        order = list(self.services)
        rng.shuffle(order)
        old_failover, draft_failover = order[:3], order[3:6]
        rc_notes = rng.sample(self.services, 6)
        for s in near_rollback:
            copy = (
                f"Copied from the runbook repository on {_date(rng, 2026, (4, 9))}; if this page and the repository "
                f"differ, the repository wins.\n"
                f"When to roll back: error rate above {s.err}% for {s.err_minutes} minutes after a deploy.\n"
                f"How: `shipctl rollback {s.code} --to previous`, then run `smoke-{s.code}-core` until it passes.\n"
                f"Typical duration: about {s.duration} minutes.\n"
                f"During a change freeze, approvals follow the change freeze policy."
            )
            wiki = self.doc("wk", f"{s.name} rollback steps (wiki copy)", copy, topics=(s.code, "rollback"))
            s.docs["wiki"] = wiki
            for kind in ("rb-cmd", "rb-trigger", "rb-smoke", "rb-duration"):
                s.facts[kind].docs = s.facts[kind].docs + (wiki,)
            err = rng.choice([e for e in (0.5, 1, 2, 5, 10) if e != s.err])
            minutes = rng.choice([m for m in (3, 5, 10, 15) if m != s.err_minutes])
            duration = rng.choice([d for d in (5, 6, 25, 30) if d != s.duration])
            text = self._rollback_text(s, env="staging", err=err, minutes=minutes, duration=duration,
                                       command=f"shipctl rollback {s.code} --env staging --to previous",
                                       smoke=f"smoke-{s.code}-staging", approval="No approval is needed in staging.")
            twin = self.doc("rb", f"Runbook: roll back {s.name} (staging)", text, topics=(s.code, "rollback"),
                            version="v2")
            s.docs["staging"] = twin
            self.trap(s.facts["rb-cmd"], twin, "stg",
                      f"{s.name} is rolled back with `shipctl rollback {s.code} --env staging --to previous`.")
            self.trap(s.facts["rb-trigger"], twin, "stg",
                      f"A {s.name} deploy is rolled back when the error rate stays above {err}% for {minutes} minutes.")
            self.trap(s.facts["rb-smoke"], twin, "stg",
                      f"After a {s.name} rollback, the `smoke-{s.code}-staging` smoke suite must pass.")
            self.trap(s.facts["rb-duration"], twin, "stg", f"A {s.name} rollback usually takes about {duration} minutes.")
        for s in old_rollback:
            err = rng.choice([e for e in (1, 2, 3, 5) if e != s.err])
            minutes = rng.choice([m for m in (5, 10, 15) if m != s.err_minutes])
            duration = rng.choice([d for d in (25, 30, 40) if d != s.duration])
            text = (
                f"Status: superseded by v2 on {_date(rng, 2026, (1, 3))}; kept for reference.\n"
                f"Roll back when the {s.name} error rate stays above {err}% for {minutes} minutes. Run "
                f"`deployctl revert {s.code}` to return to the previous build, then run the `smoke-{s.code}` suite. "
                f"A rollback takes about {duration} minutes. Rollbacks never need approval."
            )
            old = self.doc("rb", f"Runbook: roll back {s.name} (superseded)", text, topics=(s.code, "rollback"),
                           version="v1")
            s.docs["rollback-old"] = old
            self.trap(s.facts["rb-cmd"], old, "old", f"{s.name} is rolled back with `deployctl revert {s.code}`.")
            self.trap(s.facts["rb-trigger"], old, "old",
                      f"A {s.name} deploy is rolled back when the error rate stays above {err}% for {minutes} minutes.")
            self.trap(s.facts["rb-smoke"], old, "old", f"After a {s.name} rollback, the `smoke-{s.code}` suite must pass.")
            self.trap(s.facts["rb-duration"], old, "old", f"A {s.name} rollback usually takes about {duration} minutes.")
        for s in old_failover:
            region = rng.choice([r for r in REGIONS if r not in (s.region, s.standby)])
            rto, ttl = s.rto * 2, s.ttl * 5
            text = (
                f"Status: superseded by v3 on {_date(rng, 2026, (2, 6))}.\n"
                f"{s.name} runs in {s.region} with a cold standby in {region}. Lower the DNS TTL to {ttl} seconds, "
                f"then run `shipctl failover {s.code} --to {region}`. Target recovery time: {rto} minutes."
            )
            old = self.doc("rb", f"Runbook: fail over {s.name} (superseded)", text, topics=(s.code, "failover"),
                           version="v2")
            s.docs["failover-old"] = old
            self.trap(s.facts["fo-region"], old, "old", f"{s.name} fails over to its standby in {region}.")
            self.trap(s.facts["fo-cmd"], old, "old",
                      f"{s.name} is failed over with `shipctl failover {s.code} --to {region}`.")
            self.trap(s.facts["fo-rto"], old, "old", f"The recovery time objective for {s.name} is {rto} minutes.")
            self.trap(s.facts["fo-ttl"], old, "old", f"Before a {s.name} failover, the DNS TTL is lowered to {ttl} seconds.")
        for s in draft_failover:
            region = rng.choice([r for r in REGIONS if r not in (s.region, s.standby)])
            rto = max(10, s.rto - 5)
            text = (
                f"Draft, not yet approved: the plan for moving the {s.name} standby in 2027.\n"
                f"{s.name} runs in {s.region} with a warm standby in {region}. Only the incident commander may "
                f"declare a regional failover.\n"
                f"1. Lower the DNS TTL of {s.code}.halyard.example to {s.ttl} seconds and wait one TTL.\n"
                f"2. Run `shipctl failover {s.code} --to {region}`.\n"
                f"3. Keep writes paused until replication lag is below {s.lag} seconds, then resume them.\n"
                f"Targets: recovery time objective (RTO) {rto} minutes; recovery point objective (RPO) {s.rpo} minutes."
            )
            draft = self.doc("rb", f"Runbook: fail over {s.name} (draft for the 2027 standby move)", text,
                             topics=(s.code, "failover"), version="v4-draft")
            s.docs["failover-draft"] = draft
            for kind in ("fo-ttl", "fo-lag", "fo-rpo"):
                s.facts[kind].contested = True   # the draft repeats them, and rubric-3 does not accept drafts
            self.trap(s.facts["fo-region"], draft, "draft", f"{s.name} fails over to its warm standby in {region}.")
            self.trap(s.facts["fo-cmd"], draft, "draft",
                      f"{s.name} is failed over with `shipctl failover {s.code} --to {region}`.")
            self.trap(s.facts["fo-rto"], draft, "draft", f"The recovery time objective for {s.name} is {rto} minutes.")
        for s in rc_notes:
            removal = f"{s.major}.{s.minor + 3}"
            flag = f"{s.code}_" + next(w for w in re.split(r"[^a-z0-9]+", s.features[2].lower()) if len(w) > 3)
            text = (
                f"{s.name} {s.version(2)}-rc1, release candidate, published {_date(rng, 2026, (7, 7))}.\n"
                f"New: {s.features[2]}, behind the `{flag}` flag and off by default.\n"
                f"Deprecated: the `{s.endpoint}` endpoint. It will be removed in {s.name} {removal}; use the v2 "
                f"endpoint instead.\nKnown issues: the changelog of the final release may differ."
            )
            rc = self.doc("rn", f"{s.name} {s.version(2)}-rc1 release notes (release candidate)", text,
                          topics=(s.code, "release-notes"), version=f"{s.version(2)}-rc1")
            s.docs["rc"] = rc
            self.trap(s.facts["default-on"], rc, "rc",
                      f"{s.name} {s.version(2)} ships {s.features[2]} behind the `{flag}` flag, off by default.")
            self.trap(s.facts["removal"], rc, "rc",
                      f"The `{s.endpoint}` endpoint of {s.name} will be removed in {s.name} {removal}.")

    def _policy(self, title: str, text: str, version: str, topic: str, *, old: tuple[str, str] | None = None
                ) -> tuple[str, str | None]:
        doc = self.doc("pol", title, text, topics=("policy", topic), version=version)
        old_doc = None
        if old is not None:
            old_doc = self.doc("pol", f"{title} (superseded)", old[1], topics=("policy", topic), version=old[0])
        return doc, old_doc

    def _pfact(self, key: str, text: str, question: str, clause: str, doc: str, topic: str, *,
               old: tuple[str, str] | None = None, critical: bool = False) -> Fact:
        fact = self.fact(key, key, text, question, clause, "", [doc], ("policy", topic), critical=critical)
        if old is not None:
            self.trap(fact, old[0], "old", old[1])
        return fact

    def _policies(self) -> None:
        p, pf = self._policy, self._pfact
        doc, old = p(
            "Data retention policy",
            "Data retention policy, v3, effective 2026-04-01. Application logs are kept for 90 days and then "
            "deleted. Audit logs are kept for 400 days in the compliance archive. Database backups are kept for "
            "35 days. Customer data exports are deleted 7 days after they are generated. A customer's request to "
            "delete their data is completed within 30 days. This version replaces v2.",
            "v3", "retention",
            old=("v2", "Status: superseded by v3 on 2026-04-01.\nData retention policy, v2, effective 2025-01-15. "
                       "Application logs are kept for 30 days. Audit logs are kept for 365 days. Database backups "
                       "are kept for 14 days. Customer data exports are deleted 7 days after they are generated. "
                       "Deletion requests are completed within 45 days."))
        pf("retention-app-logs", "Application logs are kept for 90 days.", "How long are application logs kept?",
           "how long are application logs kept", doc, "retention",
           old=(old, "Application logs are kept for 30 days."))
        pf("retention-audit-logs", "Audit logs are kept for 400 days.", "How long are audit logs kept?",
           "how long are audit logs kept", doc, "retention", old=(old, "Audit logs are kept for 365 days."))
        pf("retention-backups", "Database backups are kept for 35 days.", "How long are database backups kept?",
           "how long are database backups kept", doc, "retention", old=(old, "Database backups are kept for 14 days."),
           critical=True)
        pf("retention-deletion", "A customer's deletion request is completed within 30 days.",
           "How quickly must a customer's request to delete their data be completed?",
           "how quickly must a deletion request be completed", doc, "retention",
           old=(old, "A customer's deletion request is completed within 45 days."), critical=True)
        exports = pf("retention-exports", "Customer data exports are deleted 7 days after they are generated.",
                     "When are customer data exports deleted?", "when are customer data exports deleted", doc,
                     "retention")
        exports.contested = True
        self.disputes["retention-exports"] = (
            "Reviewer B would accept the superseded v2 retention policy as support, since the 7-day rule did not "
            "change; rubric-3 judges superseded documents not relevant, so it stays at grade 0.")
        # Citing the superseded version for the unchanged rule states the right thing on a source rubric-3 rejects.
        self.traps["retention-exports"] = [Trap("retention-exports", old, "retention-exports",
                                                "Customer data exports are deleted 7 days after they are generated.")]

        doc, old = p(
            "Incident severity policy",
            "Incident severity policy, v2. Sev1: a tier-1 service is down, or customer data is at risk. Sev2: a "
            "service is degraded and a workaround exists. For a Sev1, an incident commander is assigned within 10 "
            "minutes and the status page is updated within 15 minutes, then every 30 minutes until resolution. "
            "For a Sev2, the status page is updated within 60 minutes. A postmortem is due within 5 business days "
            "of any Sev1 or Sev2.",
            "v2", "incidents",
            old=("v1", "Status: superseded by v2.\nIncident severity policy, v1. Sev1: a tier-1 service is down. "
                       "Sev2: a service is degraded. For a Sev1, update the status page within 30 minutes. A "
                       "postmortem is due within 10 business days of a Sev1."))
        pf("sev1-status-page", "For a Sev1, the status page is updated within 15 minutes.",
           "How soon must the status page be updated during a Sev1 incident?",
           "how soon must the status page be updated in a Sev1", doc, "incidents",
           old=(old, "For a Sev1, the status page is updated within 30 minutes."), critical=True)
        pf("postmortem-due", "A postmortem is due within 5 business days of a Sev1 or Sev2.",
           "How soon after a Sev1 is the postmortem due?", "when is the postmortem due after a Sev1", doc, "incidents",
           old=(old, "A postmortem is due within 10 business days of a Sev1."))
        pf("sev2-status-page", "For a Sev2, the status page is updated within 60 minutes.",
           "How soon must the status page be updated during a Sev2 incident?",
           "how soon must the status page be updated in a Sev2", doc, "incidents")

        doc, old = p(
            "Change freeze policy",
            "Change freeze policy, v2. The holiday change freeze runs from 2026-12-18 to 2027-01-04. During the "
            "freeze only fixes for Sev1 or Sev2 incidents and security patches may be deployed. Exceptions are "
            "approved by the VP of Engineering. Rollbacks of tier-1 services during the freeze are approved by the "
            "incident commander; rollbacks of tier-2 services by the owning team's tech lead. Rollback runbooks "
            "that name another approver are out of date.",
            "v2", "change-freeze",
            old=("v1", "Status: superseded by v2.\nChange freeze policy, v1. The holiday change freeze runs from "
                       "2025-12-19 to 2026-01-05. Only urgent fixes may be deployed. Exceptions are approved by the "
                       "release manager."))
        self.freeze_doc = doc
        pf("freeze-dates", "The holiday change freeze runs from 2026-12-18 to 2027-01-04.",
           "When does the holiday change freeze start and end?", "when does the holiday change freeze run", doc,
           "change-freeze", old=(old, "The holiday change freeze runs from 2025-12-19 to 2026-01-05."))
        pf("freeze-exceptions", "Exceptions to the change freeze are approved by the VP of Engineering.",
           "Who approves an exception to the holiday change freeze?", "who approves a freeze exception", doc,
           "change-freeze", old=(old, "Exceptions to the change freeze are approved by the release manager."),
           critical=True)

        doc, old = p(
            "Deploy approval policy",
            "Deploy approval policy, v2. Every production deploy needs one reviewer; deploys of tier-1 services "
            "need two. Deploys after 14:00 UTC on Fridays need the release manager's approval. Deploys go through "
            "shipctl; manual changes on hosts are not allowed. Every deploy records its change ticket in the OPS "
            "project.",
            "v2", "deploys",
            old=("v1", "Status: superseded by v2.\nDeploy approval policy, v1. Every production deploy needs one "
                       "reviewer. Deploys after 16:00 UTC on Fridays need the release manager's approval."))
        pf("friday-cutoff", "Deploys after 14:00 UTC on Fridays need the release manager's approval.",
           "After what time on Fridays does a deploy need the release manager's approval?",
           "after what time on Fridays does a deploy need approval", doc, "deploys",
           old=(old, "Deploys after 16:00 UTC on Fridays need the release manager's approval."))
        pf("tier1-reviewers", "Deploys of tier-1 services need two reviewers.",
           "How many reviewers does a deploy of a tier-1 service need?", "how many reviewers does a tier-1 deploy need",
           doc, "deploys", old=(old, "Every production deploy needs one reviewer."))
        pf("deploy-ticket", "Every deploy records its change ticket in the OPS project.",
           "Where is the change ticket of a deploy recorded?",
           "where is the change ticket of a deploy recorded", doc, "deploys")

        doc, old = p(
            "Production access policy",
            "Production access policy, v2. Access to production is reviewed every quarter by each team's manager. "
            "Break-glass access expires after 4 hours and pages the security on-call when it is used. Contractors "
            "never get standing production access.",
            "v2", "access",
            old=("v1", "Status: superseded by v2.\nProduction access policy, v1. Access to production is reviewed "
                       "once a year. Break-glass access expires after 8 hours."))
        pf("access-review", "Production access is reviewed every quarter.", "How often is production access reviewed?",
           "how often is production access reviewed", doc, "access",
           old=(old, "Production access is reviewed once a year."))
        pf("break-glass-expiry", "Break-glass access expires after 4 hours.", "When does break-glass access expire?",
           "when does break-glass access expire", doc, "access",
           old=(old, "Break-glass access expires after 8 hours."), critical=True)
        pf("contractor-access", "Contractors never get standing production access.",
           "Can contractors get standing production access?",
           "can contractors get standing production access", doc, "access",
           critical=True)

        doc, old = p(
            "Authentication policy",
            "Authentication policy, v3. Hardware security keys are required for production access and for the "
            "admin console. Passwords are not rotated on a schedule; they are changed only on suspected compromise. "
            "Single sign-on sessions expire after 12 hours.",
            "v3", "authentication",
            old=("v2", "Status: superseded by v3.\nAuthentication policy, v2. Production access needs a second "
                       "factor; an authenticator app is enough. Passwords are rotated every 90 days. Single sign-on "
                       "sessions expire after 12 hours."))
        pf("hardware-keys", "Hardware security keys are required for production access.",
           "What second factor is required for production access?", "what second factor is required for production",
           doc, "authentication", old=(old, "An authenticator app is enough as second factor for production access."),
           critical=True)
        pf("password-rotation", "Passwords are not rotated on a schedule, only on suspected compromise.",
           "How often must passwords be rotated?", "how often must passwords be rotated", doc, "authentication",
           old=(old, "Passwords are rotated every 90 days."))

        simple = (
            ("Backup policy", "backups",
             "Backup policy, v1. The Ledger and Identity databases are backed up every 6 hours; every other "
             "database is backed up daily. Each owning team runs a restore test every month and records the result "
             "in the OPS project.",
             (("backup-frequency", "The Ledger and Identity databases are backed up every 6 hours.",
               "How often are the Ledger and Identity databases backed up?",
               "how often are the Ledger and Identity databases backed up", True),
              ("restore-tests", "Each owning team runs a restore test every month.",
               "How often must a restore from backup be tested?", "how often is a restore tested", False))),
            ("Secrets management policy", "secrets",
             "Secrets management policy, v2. Secrets live in Keyring and never in repositories. Long-lived secrets "
             "are rotated every 180 days. Service tokens expire after 24 hours and are renewed automatically.",
             (("secret-rotation", "Long-lived secrets are rotated every 180 days.",
               "How often are long-lived secrets rotated?",
               "how often are long-lived secrets rotated", True),
              ("token-expiry", "Service tokens expire after 24 hours.", "When do service tokens expire?",
               "when do service tokens expire", False))),
            ("Vendor access policy", "vendors",
             "Vendor access policy, v1. Vendors get time-boxed accounts that expire after 30 days. A renewal needs "
             "the sponsoring manager's approval and a fresh security questionnaire every year.",
             (("vendor-expiry", "Vendor accounts expire after 30 days.", "When do vendor accounts expire?",
               "when do vendor accounts expire", False),
              ("vendor-renewal", "Renewing a vendor account needs the sponsoring manager's approval.",
               "Who approves renewing a vendor account?", "who approves a vendor account renewal", False))),
            ("Customer data export policy", "exports",
             "Customer data export policy, v2. Exports are encrypted with the customer's own key. The download link "
             "is valid for 72 hours. Exports larger than 5 GB are delivered to the customer's bucket instead of a link.",
             (("export-link", "An export's download link is valid for 72 hours.",
               "How long is a customer export's download link valid?", "how long is an export download link valid", False),
              ("export-large", "Exports larger than 5 GB are delivered to the customer's bucket.",
               "How are customer exports larger than 5 GB delivered?", "how are exports above 5 GB delivered", False))),
            ("Logging policy", "logging",
             "Logging policy, v1. Never log full card numbers, passwords or API keys. Customer email addresses must "
             "be masked. Services that log request bodies must use the `redact` library.",
             (("redact-library", "Services that log request bodies must use the `redact` library.",
               "Which library must services use when they log request bodies?",
               "which library must be used to log request bodies", False),)),
            ("Postmortem policy", "postmortems",
             "Postmortem policy, v1. Postmortems are blameless. Every action item has an owner and a due date and "
             "is tracked in the OPS project. Sev1 action items are reviewed at the reliability review on Thursdays.",
             (("action-review", "Sev1 action items are reviewed at the reliability review on Thursdays.",
               "When are Sev1 action items reviewed?", "when are Sev1 action items reviewed", False),)),
            ("Security vulnerability disclosure policy", "security",
             "Vulnerability disclosure policy, v1. External reports go to security@halyard.example. Reports are "
             "acknowledged within 2 business days, and reporters are told the outcome within 30 days.",
             (("vuln-ack", "External vulnerability reports are acknowledged within 2 business days.",
               "How quickly are external vulnerability reports acknowledged?",
               "how quickly are vulnerability reports acknowledged", False),)),
            ("Capacity policy", "capacity",
             "Capacity policy, v1. Tier-1 services keep at least 40% headroom at the weekly peak. Capacity is "
             "reviewed in the first week of each month with the platform team.",
             (("headroom", "Tier-1 services keep at least 40% headroom at the weekly peak.",
               "How much headroom must tier-1 services keep?", "how much headroom must tier-1 services keep", False),)),
        )
        for title, topic, text, facts in simple:
            doc, _ = p(title, text, "v1" if "v1." in text else "v2", topic)
            for key, prop, question, clause, critical in facts:
                pf(key, prop, question, clause, doc, topic, critical=critical)

    def _oncall(self) -> None:
        f = self.fact
        hb = self.doc(
            "oc", "On-call handbook",
            "This handbook applies to every team; where a team page disagrees, the handbook wins. Acknowledge a "
            "page within 5 minutes. If the primary does not acknowledge within 15 minutes, Beacon escalates to the "
            "secondary. Rotations hand off on Mondays at 10:00 UTC. On-call engineers must be able to reach a "
            "laptop within 30 minutes. After a night with more than two pages, the on-call engineer may start the "
            "next day late. On-call pay is described in the HR compensation document.",
            topics=("oncall",), version="v4")
        tags = ("oncall", "handbook")
        self.handbook = hb
        self.oncall_facts = {
            "ack": f("ack-time", "ack", "A page must be acknowledged within 5 minutes; the handbook overrides team pages.",
                     "How quickly must a page be acknowledged?", "how quickly must a page be acknowledged", "", [hb],
                     tags, critical=True),
            "escalate": f("escalation-time", "escalate",
                          "Beacon escalates an unacknowledged page to the secondary after 15 minutes.",
                          "After how long is an unacknowledged page escalated?", "when is a page escalated", "", [hb],
                          tags),
            "handoff": f("handoff-time", "handoff", "On-call rotations hand off on Mondays at 10:00 UTC.",
                         "When do on-call rotations hand off?", "when do rotations hand off", "", [hb], tags),
            "laptop": f("laptop-time", "laptop", "On-call engineers must be able to reach a laptop within 30 minutes.",
                        "How quickly must an on-call engineer be able to reach a laptop?",
                        "how quickly must an on-call engineer reach a laptop", "", [hb], tags),
            "late": f("late-start", "late",
                      "After a night with more than two pages, the on-call engineer may start the next day late.",
                      "May I start late after a bad on-call night?", "when may an on-call engineer start late", "",
                      [hb], tags),
        }
        for kind in ("ack", "escalate", "handoff", "laptop"):
            self.oncall_facts[kind].contested = True   # some team pages disagree
        esc = self.doc(
            "oc", "Escalation paths",
            "A Sev1 pages the incident commander rotation `ic-primary` in addition to the service rotation. If a "
            "Sev1 is not mitigated within 60 minutes, the incident commander pages the engineering director on "
            "call. Security incidents also page `security-oncall`. The support duty manager owns customer "
            "communication during any incident.",
            topics=("oncall", "incidents"), version="v2")
        f("ic-rotation", "esc", "A Sev1 pages the incident commander rotation `ic-primary`.",
          "Which rotation provides the incident commander for a Sev1?", "which rotation provides the incident commander",
          "", [esc], ("oncall", "incidents"), critical=True)
        f("director-page", "esc", "If a Sev1 is not mitigated within 60 minutes, the engineering director is paged.",
          "When is the engineering director paged during a Sev1?", "when is the engineering director paged", "",
          [esc], ("oncall", "incidents"))
        f("customer-comms", "esc", "The support duty manager owns customer communication during an incident.",
          "Who owns customer communication during an incident?", "who owns customer communication during an incident",
          "", [esc], ("oncall", "incidents"))
        beacon = self.doc(
            "oc", "Beacon paging guide",
            "Override a shift with `/beacon override @name 2h`. Silence a noisy alert with `/beacon snooze`; a "
            "snooze lasts at most 2 hours, and any snooze longer than 30 minutes needs a ticket in the OPS "
            "project. Beacon calls your phone if a page is not acknowledged in the app within 3 minutes.",
            topics=("oncall",), version="v1")
        f("beacon-override", "beacon", "A shift is overridden with `/beacon override @name 2h`.",
          "How do I override someone's on-call shift in Beacon?", "how is a shift overridden in Beacon", "", [beacon],
          ("oncall", "beacon"))
        f("snooze-limit", "beacon", "A Beacon snooze lasts at most 2 hours.", "How long can an alert be snoozed in Beacon?",
          "how long can an alert be snoozed", "", [beacon], ("oncall", "beacon"))
        f("snooze-ticket", "beacon", "A snooze longer than 30 minutes needs a ticket in the OPS project.",
          "When does snoozing an alert need a ticket?", "when does a snooze need a ticket", "", [beacon],
          ("oncall", "beacon"))
        handoff = self.doc(
            "oc", "On-call handoff checklist",
            "At handoff, walk through open incidents, snoozed alerts and action items due this week. Record the "
            "handoff in the #oncall-handoff channel with the outgoing and incoming names and anything unusual.",
            topics=("oncall",), version="v1")
        f("handoff-channel", "beacon", "On-call handoffs are recorded in the #oncall-handoff channel.",
          "Where is an on-call handoff recorded?", "where is a handoff recorded", "", [handoff], ("oncall",))
        # Team pages; some disagree with the handbook, one claims a service another team owns.
        rng = self.rng
        by_team: dict[str, list[Service]] = {}
        for s in self.services:
            by_team.setdefault(s.team, []).append(s)
        conflicts = {
            "Basalt": ("ack", "We acknowledge pages within 10 minutes and escalate to the secondary after 15 minutes.",
                       "Basalt on-call engineers have 10 minutes to acknowledge a page."),
            "Garnet": ("ack", "Pages are acknowledged within 10 minutes; handoff is on Mondays at 10:00 UTC.",
                       "Garnet on-call engineers have 10 minutes to acknowledge a page."),
            "Driftwood": ("handoff", "Our rotation hands off on Tuesdays at 09:00 UTC, after the weekly planning meeting.",
                          "The Driftwood rotation hands off on Tuesdays at 09:00 UTC."),
            "Fjord": ("escalate", "If the primary does not acknowledge, Beacon escalates to the secondary after 30 minutes.",
                      "Beacon escalates an unacknowledged Fjord page to the secondary after 30 minutes."),
            "Ember": ("laptop", "On-call engineers must be able to reach a laptop within 45 minutes.",
                      "Ember on-call engineers must be able to reach a laptop within 45 minutes."),
        }
        claimed = rng.sample(self.services, 3)
        for i, team in enumerate(TEAMS):
            services = by_team.get(team, [])
            names = [s.name for s in services]
            rotations = [f"`{s.code}-primary`" for s in services]
            lines = [f"The {team} team owns {_join(names)} and staffs the {_join(rotations)} "
                     f"rotation{'s' if len(rotations) > 1 else ''} in Beacon. Team lead: {LEADS[i]}. "
                     f"Team channel: #team-{team.lower()}." if services else
                     f"The {team} team builds shared libraries and staffs no rotation of its own. Team lead: "
                     f"{LEADS[i]}. Team channel: #team-{team.lower()}."]
            extra = [s for s in claimed if s.team != team and team == TEAMS[(TEAMS.index(s.team) + 1) % len(TEAMS)]]
            for s in extra:
                lines.append(f"Since the September reorganisation, the {team} team also owns {s.name}.")
            if team in conflicts:
                lines.append(conflicts[team][1])
            else:
                lines.append("For acknowledgement times, escalation and handoffs we follow the on-call handbook.")
            lines.append(rng.choice((
                "New members shadow two shifts before joining the rotation.",
                "We review every page from the past week in Tuesday's team meeting.",
                "Swap shifts in Beacon and post the swap in the team channel.",
            )))
            page = self.doc("oc", f"{team} team on-call page", " ".join(lines), topics=("oncall", "teams"), version="v1")
            for s in services:
                s.facts["owner"].docs += (page,)   # "The <team> team owns <service>" supports ownership too
            for s in extra:
                self.owner_conflicts.append((s, team, page))
            if team in conflicts:
                kind, _, wrong = conflicts[team]
                self.team_conflicts.append((team, kind, page, wrong))
        for s, team, page in self.owner_conflicts:
            self.trap(s.facts["owner"], page, "alt", f"{s.name} is owned by the {team} team.")

    def _postmortems(self) -> None:
        rng = self.rng
        services = [rng.choice(self.services) for _ in range(12)]
        with_status = set(rng.sample(range(12), 8))
        for n, s in enumerate(services):
            title, what, cause_short, cause, action = INCIDENTS[n % len(INCIDENTS)]
            number = f"PM-2026-{n * 3 + 11:03d}"
            date = _date(rng, 2026, (1, 9))
            duration = rng.randint(25, 160)
            detect = rng.randint(2, 12)
            due = _date(rng, 2026, (10, 12))
            sev = 1 if s.tier == 1 else 2
            text = (
                f"Date: {date}. Severity: Sev{sev}. Duration: {duration} minutes, from the first failed request to full "
                f"recovery.\nWhat happened: {what.format(name=s.name)}.\n"
                f"Root cause: {cause.format(code=s.code, pool=rng.choice((50, 100, 200)), lock=rng.randint(12, 30))}.\n"
                f"Detection: the `{s.code}-primary` rotation was paged {detect} minutes after the first errors.\n"
                f"Action items: {action} (owner: {s.team} team, due {due}).\n"
                f"This review is blameless; see the postmortem policy."
            )
            doc = self.doc("pm", f"Postmortem {number}: {s.name} {title}", text, topics=(s.code, "postmortems"))
            tags = (s.code, "postmortem")
            key = f"pm{n * 3 + 11:03d}"
            f = self.fact
            facts = {
                "duration": f(f"{key}-duration", "pm-duration", f"The {date} {s.name} incident lasted {duration} minutes.",
                              f"How long did the {s.name} incident on {date} last?",
                              f"how long did the {date} {s.name} incident last", "", [doc], tags),
                "cause": f(f"{key}-cause", "pm-cause", f"The {date} {s.name} incident was caused by {cause_short}.",
                           f"What caused the {s.name} incident on {date}?", f"what caused the {date} {s.name} incident",
                           "", [doc], tags),
                "action": f(f"{key}-action", "pm-action",
                            f"An action item of the {date} {s.name} incident is to {action}.",
                            f"What action item came out of the {s.name} incident on {date}?",
                            f"which action item came out of the {date} {s.name} incident", "", [doc], tags),
            }
            record: dict[str, object] = {"service": s, "doc": doc, "facts": facts, "date": date, "number": number}
            if n in with_status:
                shown = duration - rng.randint(8, 20) if duration > 40 else duration + rng.randint(5, 15)
                start_h, start_m = rng.randint(0, 20), rng.choice((0, 5, 10, 15, 20, 30, 40, 45, 50))
                end = start_h * 60 + start_m + shown
                status = self.doc(
                    "st", f"Status page summary: {s.name} incident on {date}",
                    f"Between {start_h:02d}:{start_m:02d} and {end // 60 % 24:02d}:{end % 60:02d} UTC on {date}, some "
                    f"customers {rng.choice(('saw errors from', 'could not reach', 'saw delays in'))} {s.name}. The "
                    f"issue is resolved. Customer-visible impact lasted {shown} minutes. We are sorry for the disruption.",
                    topics=(s.code, "postmortems", "status-page"))
                record["status"] = status
                self.trap(facts["duration"], status, "alt", f"The {date} {s.name} incident lasted {shown} minutes.")
            self.postmortems.append(record)

    def _restricted(self) -> None:
        rng, f = self.rng, self.fact
        incidents = (
            ("exposed partner API key",
             "an API key belonging to the partner Meridian Retail was committed to a public code repository by a "
             "contractor. The key was exposed for 3 hours before the secret scanner flagged it; it was revoked and "
             "reissued 40 minutes after detection. Root cause: the contractor's repository template lacked the "
             "pre-commit secret hook. Follow-up: secret scanning is now mandatory for contractor repositories.",
             "one partner API credential had been exposed in a public location",
             ("rotated", "Credentials exposed in {n} were rotated within 2 hours of detection.",
              "How quickly were the credentials exposed in {n} rotated?"),
             ("notified", "The partner affected by {n} was notified within 24 hours.",
              "How quickly was the partner affected by {n} notified?"),
             ("whose", "The key exposed in {n} belonged to the partner Meridian Retail.",
              "Whose API key was exposed in {n}?")),
            ("phished support session",
             "a support agent opened a look-alike login page sent by SMS, and the attacker replayed the captured "
             "single sign-on session for 25 minutes from a hosting provider's network. The agent's team is Support "
             "Tier 2 in Lisbon. Root cause: support accounts still allowed authenticator-app codes.",
             "one support account was used by an unauthorised party",
             ("access-window", "In {n}, the unauthorised access lasted 25 minutes.",
              "How long did the unauthorised access in {n} last?"),
             ("revoked", "After {n}, every support session was revoked.", "What was done with support sessions after {n}?"),
             ("how", "In {n}, the session was captured through a look-alike login page sent by SMS.",
              "How was the support session in {n} captured?")),
            ("public report bucket",
             "a lifecycle rule change removed the private setting from the report export bucket, and exports of "
             "Oakline Grocers and Pellham Tools were publicly readable for 40 minutes. Root cause: the rule was "
             "edited in the console instead of through infrastructure code.",
             "report exports of two customers were publicly readable for a short time",
             ("links", "After {n}, every export link issued that day was revoked.",
              "What happened to export links after {n}?"),
             ("customers-told", "The customers affected by {n} were notified within 48 hours.",
              "How quickly were the customers affected by {n} notified?"),
             ("whose", "The exports exposed in {n} belonged to Oakline Grocers and Pellham Tools.",
              "Whose report exports were exposed in {n}?")),
            ("credential stuffing on tracking accounts",
             "automated login attempts from a residential proxy network probed 1,200 tracking accounts; 14 accounts "
             "with reused passwords were accessed and then locked. Root cause: the login endpoint had no "
             "per-account rate limit.",
             "automated login attempts targeted customer tracking accounts",
             ("reset", "Accounts targeted in {n} had their passwords reset and owners notified within 48 hours.",
              "What happened to the accounts targeted in {n}?"),
             ("rate-limit", "After {n}, a per-account login rate limit was added.",
              "What control was added after {n}?"),
             ("accessed", "In {n}, 14 accounts with reused passwords were accessed.",
              "How many accounts were actually accessed in {n}?")),
        )
        for i, (title, secret, public, fact_a, fact_b, fact_c) in enumerate(incidents, 1):
            number = f"SEC-2026-{i:02d}"
            date = _date(rng, 2026, (2, 9))
            restricted_text = f"Restricted to the security team.\nOn {date}, {secret}"
            for key, text, _ in (fact_a, fact_b):
                restricted_text += " " + text.format(n=number)
            sec = self.doc("sec", f"Security incident {number}: {title}", restricted_text, topics=(),
                           access=("security",))
            pub_text = (f"On {date} we detected that {public}. "
                        + " ".join(text.format(n=number) for _, text, _ in (fact_a, fact_b))
                        + " We found no evidence that customer payment data was affected.")
            pub = self.doc("pm", f"Public summary of security incident {number}", pub_text,
                           topics=("security", "postmortems"))
            tags = ("security", "incident")
            facts = []
            for key, text, question in (fact_a, fact_b, fact_c):
                facts.append(f(f"sec{i:02d}-{key}", "security", text.format(n=number), question.format(n=number), "", "",
                               [pub] if key != fact_c[0] else [sec], tags, critical=key == fact_c[0]))
            self.security.append({"number": number, "sec": sec, "pub": pub, "facts": facts})
        hr = self.doc(
            "hr", "On-call compensation 2026",
            "Restricted to HR. Engineers on a weekday on-call shift receive a stipend of 45 EUR per day; weekend "
            "and public-holiday shifts pay 120 EUR per day. Time spent handling pages outside working hours is "
            "paid at 150% of the hourly rate, capped at 16 hours a month.",
            topics=(), access=("hr", "people-managers"))
        self.restricted_facts += [
            f("weekday-stipend", "hr", "A weekday on-call shift pays a stipend of 45 EUR per day.",
              "What is the stipend for a weekday on-call shift?", "", "", [hr], ("oncall", "compensation")),
            f("weekend-stipend", "hr", "A weekend or public-holiday on-call shift pays 120 EUR per day.",
              "What does a weekend on-call shift pay?", "", "", [hr], ("oncall", "compensation")),
        ]
        self.doc("hr", "Engineering salary bands 2026",
                 "Restricted to HR. Salary bands for engineering levels E1 to E7, reviewed every April against the "
                 "market survey. Bands are not shared outside HR and people managers.",
                 topics=(), access=("hr",))
        pentest = self.doc(
            "sec", "Penetration test 2026: Identity findings",
            "Restricted to the security team. The 2026 external penetration test of Identity found one high-severity "
            "issue: password reset tokens did not expire when a new token was issued. It was fixed on 2026-06-30. "
            "Two medium findings concern verbose error messages on the SAML endpoint.",
            topics=(), access=("security",))
        contract = self.doc(
            "fin", "Contract terms: Meridian Retail",
            "Restricted to finance and legal. Meridian Retail's contract guarantees 99.9% monthly availability of "
            "Tracker and Gateway. Below that, Meridian receives a service credit of 10% of the monthly fee, and 25% "
            "below 99.0%. The contract renews on 2027-03-01.",
            topics=(), access=("finance", "legal"))
        self.doc("fin", "Cloud spend forecast FY2027",
                 "Restricted to finance and leadership. Forecast platform spend for FY2027 grows 14% over FY2026, "
                 "driven by the Tracker traffic growth and the 2027 standby moves.",
                 topics=(), access=("finance", "leadership"))
        reorg = self.doc(
            "lead", "Reorganisation plan: platform group 2027",
            "Restricted to leadership. In January 2027 the platform group splits into two departments: Core "
            "Services (Ledger, Identity, Gateway) and Logistics (Dispatch, Tracker, Stocksync, Pricing). Reports, "
            "Notify and Scheduler move to Core Services in the second quarter.",
            topics=(), access=("leadership",))
        breakglass = self.doc(
            "sec", "Break-glass account inventory",
            "Restricted to security and SRE leads. Break-glass accounts for Ledger are held by the SRE leads "
            "on rotation and by the Basalt team lead; the credentials are in a sealed Keyring vault that pages "
            "`security-oncall` on every read.",
            topics=(), access=("security", "sre-leads"))
        self.restricted_facts += [
            f("pentest-high", "pentest", "The 2026 Identity penetration test found that password reset tokens did not "
              "expire when a new token was issued.", "What high-severity issue did the 2026 Identity penetration test "
              "find?", "", "", [pentest], ("security", "identity"), critical=True),
            f("meridian-credit", "contract",
              "Meridian Retail receives a 10% service credit when monthly availability drops below 99.9%.",
              "What service credit does Meridian Retail get when availability drops below 99.9%?", "", "", [contract],
              ("contracts",)),
            f("reorg-split", "reorg", "In January 2027 the platform group splits into Core Services and Logistics.",
              "How will the platform group be reorganised in 2027?", "", "", [reorg], ("organisation",)),
            f("ledger-breakglass", "breakglass",
              "Ledger break-glass accounts are held by the SRE leads on rotation and the Basalt team lead.",
              "Who holds break-glass accounts for Ledger?", "", "", [breakglass], ("security", "access"),
              critical=True),
        ]


# --- the test set ---------------------------------------------------------------------------------

UNANSWERABLE = (
    ("What is the maximum request payload size that {name} accepts?", "payload-limit",
     "{name} accepts request payloads of up to 10 MB.", "overview"),
    ("How many read replicas does the {name} database run?", "replicas", "The {name} database runs three read replicas.",
     "failover"),
    ("Which programming language is {name} written in?", "language", "{name} is written in Go.", "overview"),
    ("What is the p99 latency objective for {name}?", "p99-target", "The p99 latency objective for {name} is 300 ms.",
     "overview"),
    ("When is the next {name} release scheduled?", "next-release", "The next {name} release is planned for 2026-12-01.",
     "rn2"),
    ("Which region stores the {name} database backups?", "backup-region", "{name} backups are stored in {standby}.",
     "failover"),
    ("Who is the product manager for {name}?", "pm", "The product manager for {name} is the {team} team lead.",
     "overview"),
    ("Which load balancer sits in front of {name}?", "load-balancer", "{name} sits behind the shared edge load balancer.",
     "failover"),
    ("How many requests per second does {name} handle at peak?", "peak-rps",
     "{name} handles about 4,000 requests per second at peak.",
     "overview"),
    ("How long are {name} feature flags kept after a rollout?", "flag-cleanup",
     "{name} feature flags are removed 30 days after a rollout.", "rn1"),
)
ABSTAIN = (
    "I could not find this in the documents available to me.",
    "The available documents do not answer this question.",
    "None of the retrieved documents covers this, so I can't answer it reliably.",
)
HEDGE = "The sources disagree on this ({a} says one thing, {b} another); please confirm with the document owner."
EXTRA = (
    ("extra-escalate", "If this does not resolve the problem, escalate to the owning team's on-call engineer."),
    ("extra-ticket", "Record what you did in a ticket in the OPS project."),
    ("extra-announce", "Announce the change in the incident channel before you start."),
)


class QuestionSet:
    """Questions over a `World`, in display order with IDs, splits and distractor pools."""

    def __init__(self, world: World, rng: random.Random):
        self.w = world
        self.rng = rng
        self.questions: list[Question] = []

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
        return [f for f in self.w.facts.values() if not f.contested and f.kind not in
                ("security", "hr", "pentest", "contract", "reorg", "breakglass")]

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
        triple.disputed = ("Reviewer A counts the third proposition as optional detail for a complete answer; "
                          "kept as an expected claim after discussion.")

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
        wiki.disputed = ("Reviewer B would not accept the wiki copy as support because wiki pages can drift from "
                         "the runbook repository; kept at grade 1 because it matches the repository today.")

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
        asks = {
            "ack": ("How quickly must an on-call engineer on the {team} team acknowledge a page?",
                    "A {svc} alert just paged me; how long do I have to acknowledge it?"),
            "handoff": ("When does the {team} on-call rotation hand off?",
                        "I am on call for {svc} this week; when does my shift hand over?"),
            "escalate": ("After how long is an unacknowledged {team} page escalated to the secondary?",
                         "If nobody acknowledges a {svc} page, when does the secondary get paged?"),
            "laptop": ("How quickly must an {team} on-call engineer be able to reach a laptop?",
                       "When I am on call for {svc}, how far away from a laptop may I be?"),
        }
        for n, (team, kind, page, wrong) in enumerate(w.team_conflicts):
            fact = w.oncall_facts[kind]
            services = by_team.get(team, [])
            texts = [asks[kind][0].format(team=team)]
            if services:
                texts.append(asks[kind][1].format(svc=rng.choice(services).name))
            for i, text in enumerate(texts):
                q = Question(text, "conflicting", ("oncall", team.lower(), "team-page"), fact.critical,
                             {hb: 2, page: 0}, {fact.key: (fact.text, (hb,))},
                             [Trap(fact.key, page, f"{fact.key}-{team.lower()}", wrong)])
                if i == 0 and n % 2 == 0:
                    note = f"{team.lower()}-page-differs"
                    q.grades[page] = 1
                    q.claims[note] = (f"The {team} team page still states a different rule, which contradicts the "
                                      f"on-call handbook.", (page,))
                    q.note = note
                self.questions.append(q)
        freeze = w.freeze_doc
        approver_services = rng.sample(w.services, 5)
        for s in approver_services:
            who = "the incident commander" if s.tier == 1 else "the owning team's tech lead"
            key = f"{s.code}-freeze-approver"
            text = f"During the change freeze, a rollback of {s.name} (tier {s.tier}) is approved by {who}."
            # Old copies of this runbook told people to ask the release manager.
            rb = w.docs[s.docs["rollback"]]
            rb.text = rb.text.replace("During a change freeze, approvals follow the change freeze policy.",
                                      "During a change freeze, get the release manager's approval before rolling back.")
            traps = [Trap(key, s.docs["rollback"], f"{key}-alt",
                          f"During the change freeze, a rollback of {s.name} is approved by the release manager.")]
            grades = {freeze: 2, s.docs["rollback"]: 0}
            if "wiki" in s.docs:
                wk = w.docs[s.docs["wiki"]]
                wk.text = wk.text.replace("During a change freeze, approvals follow the change freeze policy.",
                                          "During a change freeze, the release manager approves rollbacks.")
                traps.append(Trap(key, s.docs["wiki"], f"{key}-wiki", traps[0].wrong_text))
                grades[s.docs["wiki"]] = 0
            q = Question(f"Who approves a rollback of {s.name} during the holiday change freeze?", "conflicting",
                         (s.code, "change-freeze", "rollback"), True, grades, {key: (text, (freeze,))}, traps)
            self.questions.append(q)
        for i, pm in enumerate(p for p in w.postmortems if "status" in p):
            fact = pm["facts"]["duration"]
            q = self._fact_question(fact, "conflicting", extra_tags=("status-page",))
            if i == 0:
                q.disputed = ("The status page measures customer-visible impact, the postmortem the whole incident; "
                              "reviewers disagree on which window 'how long did it last' means. Kept the postmortem.")
            self.questions.append(q)
        for i, (s, team, page) in enumerate(w.owner_conflicts):
            q = self._fact_question(s.facts["owner"], "conflicting", extra_tags=("team-page",))
            if i == 0:
                q.disputed = (f"The {team} team page may reflect the reorganisation before the service catalog was "
                              f"updated; kept the catalog as authoritative until its owner confirms.")
            self.questions.append(q)

    def _unanswerable(self, n: int) -> None:
        rng = self.rng
        combos = [(t, s) for t in range(len(UNANSWERABLE)) for s in range(len(self.w.services))]
        for t, si in sorted(rng.sample(combos, n)):
            question, slug, answer, lure_kind = UNANSWERABLE[t]
            s = self.w.services[si]
            fmt = dict(name=s.name, standby=s.standby, team=s.team)
            q = Question(question.format(**fmt), "unanswerable", (s.code,), False, {}, {})
            q.lure = (s.docs[lure_kind], f"{s.code}-{slug}", answer.format(**fmt))
            if slug == "backup-region" and not any(x.disputed for x in self.questions if x.type == "unanswerable"):
                q.disputed = ("Reviewer B argues the failover runbook implies where backups live; kept unanswerable "
                              "because it names the standby region, not the backup location.")
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
                    q.disputed = ("The restricted report gives a more precise time than the public summary; kept the "
                                  "public figure because this caller may only see the summary.")
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


# --- the runs -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Behaviour:
    """How one configuration behaves, as probabilities per question type.

    `hit`: a supporting document reaches the first k (multi-evidence: its 2nd and 3rd claims use
    `hit_extra`; other positively graded documents `hit_background`); `above`: a trap (superseded,
    twin, non-authoritative) is ranked above the evidence, `below`: it is in the first k but under
    it; `follow`: the answer states what the first of them says; `hedge`: on outdated and
    conflicting questions the answer declines instead; `note`: it mentions a labelled conflict;
    `use`: it states a claim whose evidence it has; `guess`: it states a claim without its evidence
    in context (citing something else); `extra`: it adds an unrequested, unlabelled claim;
    `halluc`: it answers an unanswerable question from a look-alike document; `noise`: the share
    of draws not shared with the other configurations. Critical questions get `critical_boost` added to `hit` and
    `critical_above` times `above`: production pins the current, authoritative documents of
    critical topics, and the reranker reorders without those pins.
    """

    hit: dict[str, float]
    hit_extra: float
    hit_background: float
    above: dict[str, float]
    below: float
    follow: float
    hedge: float
    note: float
    use: float
    guess: float
    extra: float
    halluc: float
    noise: float
    critical_boost: float = 0.35
    critical_above: float = 0.2


BASE_HIT = {"lookup": 0.84, "multi-evidence": 0.92, "near-duplicate": 0.9, "outdated": 0.95, "conflicting": 0.95,
            "permission": 0.92}
BASE_ABOVE = {"near-duplicate": 0.3, "outdated": 0.06, "conflicting": 0.08, "other": 0.04}
BEHAVIOURS = {
    "prod": Behaviour(
        hit=BASE_HIT, hit_extra=0.4, hit_background=0.45,
        above=BASE_ABOVE,
        below=0.3, follow=0.85, hedge=0.55, note=0.8, use=0.99, guess=0.8, extra=0.12, halluc=0.16, noise=0.0),
    "rerank": Behaviour(
        hit={"lookup": 0.97, "multi-evidence": 0.97, "near-duplicate": 0.94, "outdated": 0.94, "conflicting": 0.94,
             "permission": 0.95},
        hit_extra=0.95, hit_background=0.7,
        above={"near-duplicate": 0.05, "outdated": 0.45, "conflicting": 0.45, "other": 0.04},
        below=0.3, follow=0.75, hedge=0.55, note=0.8, use=0.99, guess=0.8, extra=0.03, halluc=0.16, noise=0.12,
        critical_boost=0.0, critical_above=1.0),
    "hybrid": Behaviour(
        hit={"lookup": 0.84, "multi-evidence": 0.92, "near-duplicate": 0.92, "outdated": 0.94, "conflicting": 0.95,
             "permission": 0.92},
        hit_extra=0.44, hit_background=0.5,
        above={"near-duplicate": 0.25, "outdated": 0.08, "conflicting": 0.08, "other": 0.04},
        below=0.3, follow=0.85, hedge=0.55, note=0.8, use=0.99, guess=0.8, extra=0.12, halluc=0.16, noise=0.35),
    "temp07": Behaviour(
        hit=BASE_HIT, hit_extra=0.4, hit_background=0.45,
        above=BASE_ABOVE,
        below=0.3, follow=0.8, hedge=0.6, note=0.8, use=0.96, guess=0.8, extra=0.15, halluc=0.2, noise=0.0),
}


STRATIFIED = ("hit", "trap", "follow", "hedge", "use", "guess", "extra", "halluc")
"""Draw kinds spread evenly over each question type (see `Simulator._draws`)."""


@dataclass(frozen=True)
class RunSpec:
    run_id: str
    behaviour: str
    retrieval_of: str | None
    created_at: str
    retrieval: dict[str, object]
    generation: dict[str, object]
    notes: str
    failures: int
    missing: int = 0
    group: str | None = None
    repeat: int | None = None
    rerank_ms: float = 0.0
    rerank_cost: float = 0.0
    chunk_chars: int | None = None
    """Retrieve chunks of at most this many characters (the run's own chunk map) instead of documents."""


PROD_RETRIEVAL = {"retriever": "hybrid-bm25-dense", "index": CORPUS_VERSION, "fusion": "weighted-sum",
                  "bm25_weight": 0.35, "candidates": 50, "reranker": None, "prefer_latest_version": True,
                  "pinned": "critical-topics",
                  "acl_filter": "before-retrieval", "returned": RETURNED}
MODEL = "halyard-answer-l-2026-08"
PROMPT = "answer-prompt-v14"
RUNS = (
    RunSpec("prod-baseline", "prod", None, "2026-11-02T08:15:00Z", PROD_RETRIEVAL,
            {"temperature": 0.0, "max_output_tokens": 400, "seed": 7},
            "Production configuration as deployed on 2026-10-28.", failures=2),
    RunSpec("rerank-v2", "rerank", None, "2026-11-03T10:40:00Z",
            PROD_RETRIEVAL | {"reranker": "xenc-rerank-v2", "rerank_depth": 50, "prefer_latest_version": False,
                              "pinned": None,
                              "acl_filter": "before-retrieval; reranker reads its own candidate cache"},
            {"temperature": 0.0, "max_output_tokens": 400, "seed": 7},
            "Cross-encoder reranker over the top 50 candidates. The version-recency boost and the pins for "
            "critical topics are not applied after reranking.", failures=3, rerank_ms=240.0, rerank_cost=0.0008),
    RunSpec("hybrid-v1", "hybrid", None, "2026-11-04T14:05:00Z",
            PROD_RETRIEVAL | {"fusion": "reciprocal-rank", "rrf_k": 60, "bm25_weight": None},
            {"temperature": 0.0, "max_output_tokens": 400, "seed": 7},
            "Reciprocal-rank fusion instead of the weighted sum. Two questions have no record: the batch job "
            "dropped them after a worker restart.", failures=2, missing=2, rerank_ms=15.0),
) + tuple(
    RunSpec(f"temp07-r{n}", "temp07", "prod-baseline", f"2026-11-05T{8 + n:02d}:00:00Z", PROD_RETRIEVAL,
            {"temperature": 0.7, "top_p": 0.95, "max_output_tokens": 400},
            f"Production retrieval with sampling at temperature 0.7, repeat {n} of 3.", failures=1 if n != 2 else 2,
            group="temp07", repeat=n)
    for n in (1, 2, 3)
) + (
    RunSpec("chunk-160", "prod", "prod-baseline", "2026-11-06T09:30:00Z",
            PROD_RETRIEVAL | {"index": f"{CORPUS_VERSION}/sentences-{CHUNK_CHARS}", "unit": "chunk",
                              "chunking": f"whole sentences, at most {CHUNK_CHARS} characters", "chunk_overlap": 0},
            {"temperature": 0.0, "max_output_tokens": 400, "seed": 7},
            f"Production retriever and model over sentence-sized chunks (at most {CHUNK_CHARS} characters) instead "
            "of whole documents; the chunk map is runs/chunk-160/chunks.jsonl.", failures=2,
            chunk_chars=CHUNK_CHARS),
)


def split_sentences(text: str, limit: int) -> list[tuple[int, int]]:
    """(start, end) character spans of `text` in chunks of whole sentences, at most `limit` characters
    each (a longer sentence is a chunk of its own); `text[start:end]` is the chunk, without the
    whitespace between chunks."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S.*?(?:[.!?](?=\s|$)|(?=\n)|$)", text, re.S)]
    chunks: list[tuple[int, int]] = []
    for start, end in spans:
        if chunks and end - chunks[-1][0] <= limit:
            chunks[-1] = (chunks[-1][0], end)
        else:
            chunks.append((start, end))
    return chunks


def chunk_map(world: World, limit: int) -> dict[str, list[dict[str, object]]]:
    """Every document's chunks (document ID -> chunk rows in document order): `id` is
    ``<doc>#<n>`` (0-based), `doc_version` the document's version or the corpus version."""
    out = {}
    for doc_id in sorted(world.docs):
        doc = world.docs[doc_id]
        out[doc_id] = [
            {"id": f"{doc_id}#{n}", "doc": doc_id, "doc_version": doc.version or CORPUS_VERSION,
             "text": doc.text[start:end], "start": start, "end": end}
            for n, (start, end) in enumerate(split_sentences(doc.text, limit))
        ]
    return out


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
                claim = {"id": "unverified-answer", "citations": [visible[0]],
                         "text": "This information is not documented beyond the public pages."}
                return [claim], f"{claim['text']} [{visible[0]}]"
            return [], ABSTAIN[int(u["tail"] * len(ABSTAIN))]
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
                    return [], HEDGE.format(a=evidence[0], b=first.doc)
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
            cid, text = EXTRA[int(u["extra-kind"] * len(EXTRA))]
            claims.append({"id": cid, "citations": [visible[0]], "text": text})
        if not claims:
            return [], ABSTAIN[int(u["tail"] * len(ABSTAIN))]
        answer = " ".join(f"{c['text']} [{', '.join(c['citations'])}]" for c in claims)
        return claims, answer

    def _record(self, spec: RunSpec, q: Question, ranking: list[str], claims: list[dict[str, object]], answer: str,
                rng: random.Random, *, failed: bool, context: str | None = None) -> dict[str, object]:
        if failed:
            timeout = rng.random() < 0.6
            return {
                "question_id": q.id, "retrieved": [], "context": "", "answer": "", "claims": [],
                "latency_ms": round(30000 + rng.uniform(0, 40)) if timeout else round(rng.uniform(300, 900)),
                "cost_usd": 0.0,
                "error": "answer model timed out after 30 s" if timeout else "answer model returned HTTP 503",
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


# --- labels: pooled judgements, a label gap, two reviewers ----------------------------------------

POOLED_FROM = ("prod-baseline", "hybrid-v1")
"""The runs whose returned documents (all `RETURNED` of them) were judged when the suite was labelled:
every one of them carries a grade, 0 when it does not help. The reranker came later, so documents
only it brings into the first k carry no label (unjudged; they count as not relevant)."""
GAP_RUN = "rerank-v2"
REVIEWERS = ("amara", "kofi")


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
        s = service
        report = world.doc("dr", f"Failover drill: {s.name}, 2026-10-14", (
            f"Drill report by the {s.team} team. We failed {s.name} over from {s.region} to {s.standby} in a "
            f"scheduled drill.\nSteps as run: lowered the DNS TTL of {s.code}.halyard.example to {s.ttl} seconds "
            f"and waited one TTL; ran `shipctl failover {s.code} --to {s.standby}`; resumed writes once replication "
            f"lag was below {s.lag} seconds.\nObserved recovery time: {max(1, s.rto - 4)} minutes against an "
            f"objective of {s.rto} minutes. No follow-up actions."), topics=())
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
    notes = {1: "background on the service the question asks about", 0: "does not help answer the question"}
    amara = [{"at": f"2026-11-09T09:{12 + 3 * i:02d}:00Z", "reviewer": "amara", "kind": "relevance",
              "question_id": q, "doc_id": d, "grade": g, "note": notes[g]} for i, (q, d, g) in enumerate(pairs)]
    kofi = [{"at": f"2026-11-09T14:{5 + 4 * i:02d}:00Z", "reviewer": "kofi", "kind": "relevance",
             "question_id": q, "doc_id": d, "grade": g, "note": notes[g]} for i, (q, d, g) in enumerate(pairs[:4])]
    kofi[2] |= {"grade": 0, "note": "general text about the service; an answer gains nothing from it"}
    disputed = next(q for q in questions if q.type == "conflicting" and not q.disputed)
    kofi.append({"at": "2026-11-09T14:30:00Z", "reviewer": "kofi", "kind": "dispute", "question_id": disputed.id,
                 "note": "two current pages disagree here; score it once the owners say which one holds"})
    return {"amara": amara, "kofi": kofi}


# --- a free-text run, its judge and a reviewed sample ----------------------------------------------

TEXT_RUN = RunSpec("prod-text", "prod", None, "2026-11-07T09:00:00Z", PROD_RETRIEVAL,
                   {"temperature": 0.0, "max_output_tokens": 400, "seed": 7, "answer_format": "sentences"},
                   "Production retrieval and model with the free-text answer prompt: the answer as sentences, each "
                   "citing indexes into the retrieved list (the TREC RAG format), aligned to the claims at refresh.",
                   failures=2)
"""Production's answers written as sentences: the same retrieval and claims as prod-baseline."""
TEXT_PROMPT = "answer-prompt-v14-sentences"
PREAMBLE = "Here is what I found:"
JUDGE_NAME = "checker"
JUDGE_DECLARATION = {"command": ["python3", "judges/checker.py"], "timeout": 10}
JUDGES_TOML = """\
# The demo's alignment judge: a small deterministic program (token overlap, numbers that must match,
# refusals and hedges). `ragslice align data/demo --runs prod-text --judge checker` asks it about the
# sentences judgements/checker.jsonl does not answer yet; refresh reads only that cache.
[judges.checker]
command = ["python3", "judges/checker.py"]
timeout = 10
"""
JUDGE_SCRIPT = r"""
# Align one answer sentence per input line to the question's expected claims (ragslice's judge protocol).
import json
import re
import sys

STOP = set("a an and are as at be by for from has have in is it its of on or the to was were with".split())
DECLINES = ("could not find", "do not answer", "can't answer", "cannot answer", "please confirm")


def words(text):
    return {w for w in re.findall(r"[^\W_]+", text.lower()) if w not in STOP}


def numbers(text):
    return set(re.findall(r"\d+(?:[.,]\d+)?", text))


def answer(request):
    sentence = request["sentence"]
    introduces = sentence.rstrip().endswith(":") and not request["citations"]
    if introduces or any(phrase in sentence.lower() for phrase in DECLINES):
        return {"claim_ids": "no_claim", "confidence": 0.95, "rationale": "introduces, declines or hedges"}
    found = []
    for claim in request["claims"]:
        wanted = words(claim["proposition"])
        share = len(words(sentence) & wanted) / len(wanted) if wanted else 0.0
        if share >= 0.5 and numbers(claim["proposition"]) == numbers(sentence):
            found.append((share, claim["id"]))
    if not found:
        return {"claim_ids": "unlabelled", "confidence": 0.7, "rationale": "no expected claim with the same figures"}
    return {"claim_ids": sorted(c for _, c in found), "confidence": round(max(s for s, _ in found), 2),
            "rationale": "shares the claim's words and figures"}


if __name__ == "__main__":
    for line in sys.stdin:
        print(json.dumps(answer(json.loads(line))), flush=True)
""".lstrip("\n")


def free_text_records(world: World, questions: list[Question], runs: dict[str, list[dict[str, object]]]
                      ) -> list[dict[str, object]]:
    """`TEXT_RUN`'s records: prod-baseline's, each answer as sentences citing indexes into `retrieved` (an ID
    when the cited document is not retrieved); an abstention or a hedge is one sentence citing nothing, and
    some answers open with `PREAMBLE`."""
    rng = random.Random(f"{SEED}/{TEXT_RUN.run_id}")
    out = []
    for record in runs["prod-baseline"]:
        ranking = list(record["retrieved"])
        claims = list(record["claims"])
        if record["error"]:
            sentences: list[dict[str, object]] = []
        elif not claims:
            sentences = [{"text": str(record["answer"]), "citations": []}]
        else:
            sentences = [{"text": str(c["text"]), "citations": [ranking.index(d) if d in ranking else d
                                                                 for d in c["citations"]]} for c in claims]
            if len(sentences) < MAX_CLAIMS and rng.random() < 0.3:
                sentences.insert(0, {"text": PREAMBLE, "citations": []})
        latency = record["latency_ms"]
        out.append({"question_id": record["question_id"], "retrieved": ranking, "context": record["context"],
                    "answer": " ".join(str(x["text"]) for x in sentences) if sentences else "",
                    "answer_sentences": sentences, "latency_ms": latency, "cost_usd": record["cost_usd"],
                    "error": record["error"]})
    return out


def _truth(q: Question, source_record: dict[str, object], sentence: dict[str, object]) -> list[str] | str:
    """What a reviewer decides for a sentence of `free_text_records`: the expected claim its source claim
    was, else `unlabelled` (a superseded value, an extra step), or `no_claim` (the preamble, a refusal)."""
    if not sentence["citations"]:
        return "no_claim"
    source = next(c for c in source_record["claims"] if c["text"] == sentence["text"])
    return [str(source["id"])] if source["id"] in q.claims else "unlabelled"


def _requests(world: World, questions: list[Question], records: list[dict[str, object]]
              ) -> list[tuple[str, dict[str, object]]]:
    from ..metrics.reference import normalise_sentence, resolve_citations

    by_id = {q.id: q for q in questions}
    out = []
    for record in records:
        q = by_id[str(record["question_id"])]
        claims = [{"id": c, "proposition": text} for c, (text, _) in sorted(q.claims.items())]
        for sentence in record["answer_sentences"]:
            out.append((q.id, {"question": q.text, "sentence": normalise_sentence(str(sentence["text"])),
                               "citations": list(resolve_citations(sentence["citations"], record["retrieved"])),
                               "claims": claims}))
    return out


def judge_cache(world: World, questions: list[Question], records: list[dict[str, object]]) -> list[dict[str, object]]:
    """The judge's cached answers to every sentence of the free-text run, as `ragslice align` writes them (the
    judge's own `answer`, run in this process; one line per distinct request, at a fixed time)."""
    from .judges import Answer, Judge, cache_entry, declaration_hash, parse_answer

    judge = Judge(JUDGE_NAME, command=tuple(JUDGE_DECLARATION["command"]), timeout=JUDGE_DECLARATION["timeout"],
                  declaration_hash=declaration_hash(JUDGE_DECLARATION))
    program: dict[str, object] = {}
    exec(compile(JUDGE_SCRIPT, "checker.py", "exec"), program)  # the very program the demo ships
    lines, seen = [], set()
    for n, (question_id, request) in enumerate(_requests(world, questions, records)):
        entry_key = (question_id, request["sentence"], tuple(request["citations"]))
        if entry_key in seen:
            continue
        seen.add(entry_key)
        found = parse_answer(program["answer"](request), [c["id"] for c in request["claims"]])
        assert isinstance(found, Answer), found
        lines.append(cache_entry(judge, question_id, request, found, at=f"2026-11-08T10:{n // 60 % 60:02d}:{n % 60:02d}Z"))
    return lines


def alignment_reviews(questions: list[Question], runs: dict[str, list[dict[str, object]]]
                      ) -> dict[str, list[dict[str, object]]]:
    """A reviewed sample of the free-text run's sentences, split between amara and kofi: every sentence that
    states a superseded or staging value (the misalignments token overlap makes), eight refusals, six
    preambles, six extra steps and twelve plain claims, in answer order."""
    by_id = {q.id: q for q in questions}
    sources = {r["question_id"]: r for r in runs["prod-baseline"]}
    wanted = {"wrong": 99, "refusal": 8, "preamble": 6, "extra": 6, "plain": 12}
    chosen: list[tuple[str, str, list[str] | str]] = []
    seen: set[tuple[str, str]] = set()
    for record in runs[TEXT_RUN.run_id]:
        q, source = by_id[str(record["question_id"])], sources[record["question_id"]]
        for sentence in record["answer_sentences"]:
            text = str(sentence["text"])
            truth = _truth(q, source, sentence)
            kind = ("preamble" if text == PREAMBLE else "refusal" if truth == "no_claim"
                    else "plain" if isinstance(truth, list) else
                    "extra" if any(str(c["id"]).startswith("extra-") and c["text"] == text for c in source["claims"])
                    else "wrong")
            if wanted[kind] and (q.id, text) not in seen:
                wanted[kind] -= 1
                seen.add((q.id, text))
                chosen.append((q.id, text, truth))
    out: dict[str, list[dict[str, object]]] = {"amara": [], "kofi": []}
    for n, (question_id, text, truth) in enumerate(chosen):
        reviewer = "amara" if n % 2 == 0 else "kofi"
        out[reviewer].append({"at": f"2026-11-10T{9 + n // 60:02d}:{n % 60:02d}:00Z", "reviewer": reviewer,
                              "kind": "alignment", "question_id": question_id, "sentence": text, "claim_ids": truth})
    return out


# --- writing --------------------------------------------------------------------------------------

POLICY = """\
# The release gate for the demo workspace: declared before any candidate was scored.
name = "release-gate"
description = "What a candidate must show before it replaces prod-baseline."
heldout_budget = 5
min_alignment_kappa = 0.8

[[gates]]
name = "critical coverage"
metric = "coverage"
slice = "critical"
aggregate = "macro"
min = 0.9

[[gates]]
name = "no answerable question loses support"
metric = "support"
slice = "answerable"
max_regressions = 0

[[gates]]
name = "recall not significantly worse"
metric = "recall"
slice = "answerable"
max_drop = 0.02
alpha = 0.05

[[gates]]
name = "current information not significantly worse"
metric = "coverage"
slice = "type:outdated"
max_drop = 0.02
alpha = 0.05

[[gates]]
name = "no unanswerable question newly answered"
metric = "abstention"
slice = "unanswerable"
max_regressions = 0

[[gates]]
name = "no restricted disclosure"
metric = "disclosures"
slice = "all"
aggregate = "total"
max = 0

[[gates]]
name = "failure rate"
metric = "failure_rate"
slice = "all"
aggregate = "rate"
max = 0.02

[[gates]]
name = "p95 latency"
metric = "latency"
slice = "all"
aggregate = "p95"
max = 3000

[[gates]]
name = "mean cost per question"
metric = "cost"
slice = "all"
aggregate = "mean"
max = 0.004
"""


def _jsonl(path: Path, rows: Sequence[dict[str, object]]) -> None:
    text = "".join(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n" for row in rows)
    path.write_text(text, encoding="utf-8", newline="\n")


def _json(path: Path, obj: dict[str, object]) -> None:
    path.write_text(json.dumps(obj, ensure_ascii=False, sort_keys=False, indent=2) + "\n", encoding="utf-8",
                    newline="\n")


def build(seed: int = SEED) -> tuple[World, list[Question], dict[str, list[dict[str, object]]]]:
    """The corpus, the questions in display order and each run's records, from `seed`."""
    world, questions, runs, _ = build_with_chunks(seed)
    return world, questions, runs


def build_with_chunks(seed: int = SEED) -> tuple[World, list[Question], dict[str, list[dict[str, object]]],
                                                 dict[str, list[dict[str, object]]]]:
    """`build` plus the chunk map (rows in document order) of each run that retrieves chunks."""
    rng = random.Random(seed)
    world = World(rng)
    world.build()
    questions = QuestionSet(world, rng).build()
    sim = Simulator(world, questions, seed)
    runs = {spec.run_id: sim.run(spec) for spec in RUNS}
    world.label_gap = plant_label_gap(world, questions, runs)
    pool_labels(questions, runs)
    runs[TEXT_RUN.run_id] = free_text_records(world, questions, runs)
    limits = {spec.run_id: spec.chunk_chars for spec in RUNS if spec.chunk_chars is not None}
    chunks = {run_id: [row for rows in chunk_map(world, limit).values() for row in rows]  # the planted report too
              for run_id, limit in limits.items()}
    return world, questions, runs, chunks


def _manifest(spec: RunSpec, seed: int) -> dict[str, object]:
    revision = random.Random(f"{seed}/{spec.run_id}/revision").getrandbits(28)
    return {
        "run_id": spec.run_id, "suite": SUITE, "suite_version": SUITE_VERSION, "corpus_version": CORPUS_VERSION,
        "created_at": spec.created_at, "code_revision": f"{revision:07x}", "retrieval": spec.retrieval, "k": K,
        "prompt_revision": TEXT_PROMPT if spec is TEXT_RUN else PROMPT, "model": MODEL, "generation": spec.generation,
        "rubric_version": RUBRIC_VERSION,
        "group": spec.group, "repeat": spec.repeat, "notes": spec.notes,
    }


def generate_demo(out: Path, *, seed: int = SEED) -> None:
    """Write the demo workspace under `out`: suites/demo/, runs/<run_id>/ and policy.toml.

    Deterministic: the same seed writes the same bytes. Existing files of the same names are
    overwritten; nothing else in `out` is touched.
    """
    out = Path(out)
    world, questions, runs, chunks = build_with_chunks(seed)
    suite_dir = out / "suites" / SUITE
    suite_dir.mkdir(parents=True, exist_ok=True)
    _json(suite_dir / "suite.json", {
        "name": SUITE, "version": SUITE_VERSION, "corpus_version": CORPUS_VERSION, "rubric_version": RUBRIC_VERSION,
        "max_claims": MAX_CLAIMS,
        "description": (
            "Halyard Freight, a fictional logistics software company: service catalog pages, runbooks, release "
            "notes, policies, on-call pages, postmortems and a few restricted documents. Grades: 2 answers the "
            "question, 1 supports it or gives needed background, 0 judged not relevant (superseded versions, "
            "staging or draft twins, non-authoritative pages, documents the caller may not see). The documents "
            "prod-baseline and hybrid-v1 returned were all judged; documents only later runs bring into the first "
            "five carry no label until a reviewer grades them (reviews/). Every record here is simulated; none "
            "measures a real system."),
    })
    _jsonl(suite_dir / "documents.jsonl", [world.docs[d].row() for d in sorted(world.docs)])
    _jsonl(suite_dir / "questions.jsonl", [q.row() for q in questions])
    reviews = suite_dir / "reviews"
    reviews.mkdir(exist_ok=True)
    aligned = alignment_reviews(questions, runs)
    for reviewer, rows in demo_reviews(world, questions, runs).items():
        _jsonl(reviews / f"{reviewer}.jsonl", rows + aligned.get(reviewer, []))
    (suite_dir / "judges.toml").write_text(JUDGES_TOML, encoding="utf-8", newline="\n")
    (suite_dir / "judges").mkdir(exist_ok=True)
    (suite_dir / "judges" / "checker.py").write_text(JUDGE_SCRIPT, encoding="utf-8", newline="\n")
    (suite_dir / "judgements").mkdir(exist_ok=True)
    _jsonl(suite_dir / "judgements" / f"{JUDGE_NAME}.jsonl", judge_cache(world, questions, runs[TEXT_RUN.run_id]))
    for spec in (*RUNS, TEXT_RUN):
        run_dir = out / "runs" / spec.run_id
        run_dir.mkdir(parents=True, exist_ok=True)
        _json(run_dir / "manifest.json", _manifest(spec, seed))
        _jsonl(run_dir / "records.jsonl", runs[spec.run_id])
        if spec.run_id in chunks:
            _jsonl(run_dir / "chunks.jsonl", chunks[spec.run_id])
    (out / "policy.toml").write_text(POLICY, encoding="utf-8", newline="\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scoring.io.demo_data", description=generate_demo.__doc__)
    parser.add_argument("--out", required=True, help="workspace folder to write (e.g. data/demo)")
    parser.add_argument("--seed", type=int, default=SEED, help=f"random seed (default {SEED})")
    args = parser.parse_args(argv)
    generate_demo(Path(args.out), seed=args.seed)
    print(f"wrote the demo workspace to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
