"""Each service's documents and facts: its catalog page, rollback and failover runbooks, a third runbook
and three release notes, then the look-alikes (wiki copies, staging twins, superseded versions,
drafts and release candidates) that state other values. The texts are in ``prose/services.toml``, the
services themselves in ``prose/company.toml``."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .model import Service, draw_date
from .prose import fill, prose

if TYPE_CHECKING:
    from .world import World


def add_services(world: World) -> None:
    _roster(world)
    for s in world.services:
        _overview(world, s)
    for s in world.services:
        _rollback(world, s)
        _failover(world, s)
        _third(world, s)
        _release_notes(world, s)
    _variants(world)


def _text(world: World, texts: list[str], **values: object) -> str:
    """One of a document's two wordings, drawn half and half."""
    return fill(texts[0] if world.rng.random() < 0.5 else texts[1], **values)


def _facts(world: World, s: Service, section: dict[str, Any], doc: str, tags: tuple[str, ...],
           **values: object) -> None:
    """The facts `section` declares for `s`, stated by `doc`."""
    for spec in section["facts"]:
        s.facts[spec["kind"]] = world.declared_fact(spec, [doc], tags, key=f"{s.code}-{spec['key']}",
                                                    subject=s.name, **values)


def _traps(world: World, s: Service, section: dict[str, Any], doc: str, suffix: str, **values: object) -> None:
    """`doc` states another value for each fact kind in the `traps` of `section`."""
    for kind, wrong in section["traps"].items():
        world.trap(s.facts[kind], doc, suffix, fill(wrong, **values))


def _roster(world: World) -> None:
    company = prose("company")
    rng, teams, regions, kinds = world.rng, company["teams"], company["regions"], tuple(prose("services")["third"])
    owners = list(teams) + [rng.choice(teams) for _ in range(len(company["services"]) - len(teams))]
    rng.shuffle(owners)
    for row, team in zip(company["services"], owners):
        code, name, tier = row["code"], row["name"], row["tier"]
        region, standby = rng.sample(regions, 2)
        major, minor = rng.randint(2, 7), rng.randint(0, 6)
        t0 = rng.choice((20, 30, 30, 60))
        t1 = t0 + rng.choice((10, 15, 30))
        t2 = t1 + rng.choice((5, 15, 30))
        s = Service(
            code, name, row["desc"], tier, tuple(row["features"]), row["endpoint"], team=team, region=region,
            standby=standby,
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
            dates=(draw_date(rng, 2026, (2, 4)), draw_date(rng, 2026, (5, 7)), draw_date(rng, 2026, (8, 10))),
            timeouts=(t0, t1, t2),
            third=kinds[len(world.services) % len(kinds)],
            removal=f"{major}.{minor + 4}",
        )
        world.services.append(s)


PARTIAL_FACTS = {"disk": "disk-threshold", "certs": "cert-rotation", "queue": "backlog-threshold",
                 "cache": "cache-flush"}
"""The fact of each third runbook's kind that the catalog page states one clause of (`prose.services.overview.partial`)."""


def partial_facts(s: Service) -> tuple[str, ...]:
    """The fact keys of the service whose claims its catalog page partly supports: its standby, and its third
    runbook's (`PARTIAL_FACTS`)."""
    return ("standby",) + ((PARTIAL_FACTS[s.third],) if s.third in PARTIAL_FACTS else ())


def _overview(world: World, s: Service) -> None:
    section = prose("services")["overview"]
    text = _text(world, section["texts"], **s.values())
    text += "".join(" " + fill(section["partial"][key], **s.values()) for key in partial_facts(s))
    doc = world.doc("ov", fill(section["title"], **s.values()), text, topics=(s.code,))
    s.docs["overview"] = doc
    _facts(world, s, section, doc, (s.code, "service-catalog"), **s.values())


def _rollback(world: World, s: Service) -> None:
    section = prose("services")["rollback"]
    values = s.values() | {"env": "production", "command": fill(section["command"], **s.values()),
                           "smoke": fill(section["smoke"], **s.values()), "approval": section["approval"]}
    text = _text(world, section["texts"], **values)
    doc = world.doc("rb", fill(section["title"], **values), text, topics=(s.code, "rollback"), version="v2")
    s.docs["rollback"] = doc
    _facts(world, s, section, doc, (s.code, "runbook", "rollback"), **values)


def _failover(world: World, s: Service) -> None:
    section = prose("services")["failover"]
    text = _text(world, section["texts"], **s.values())
    doc = world.doc("rb", fill(section["title"], **s.values()), text, topics=(s.code, "failover"), version="v3")
    s.docs["failover"] = doc
    _facts(world, s, section, doc, (s.code, "runbook", "failover"), **s.values())


def _third(world: World, s: Service) -> None:
    section = prose("services")["third"][s.third]
    values = s.values() | {name: world.rng.choice(options) for name, options in section["draws"].items()}
    topic = section["topic"]
    doc = world.doc("rb", fill(section["title"], **values), fill(section["text"], **values), topics=(s.code, topic),
                    version=section["version"])
    _facts(world, s, section, doc, (s.code, "runbook", topic), **values)
    s.docs["third"] = doc


def _release_notes(world: World, s: Service) -> None:
    rng, notes = world.rng, prose("services")["release_notes"]
    t0, t1, t2 = s.timeouts
    fixes = rng.sample(prose("company")["fixes"], 3)
    for i in range(3):
        values = s.values() | {"version": s.version(i), "date": s.dates[i], "feature": s.features[i]}
        lines = [fill(notes["released"], **values), fill(notes["new"], **values)]
        if i == 1:
            lines.append(fill(notes["changed"], timeout=t1, previous=t0))
        if i == 2:
            lines.append(fill(notes["changed"], timeout=t2, previous=t1))
            lines.append(fill(notes["deprecated"], **values))
            lines.append(fill(notes["default_on"], **values))
        lines.append(fill(notes["fixed"], fix=fixes[i]))
        lines.append(fill(notes["upgrade"], upgrade=rng.choice(prose("company")["upgrades"])))
        doc = world.doc("rn", fill(notes["title"], **values), "\n".join(lines), topics=(s.code, "release-notes"),
                        version=s.version(i))
        s.docs[f"rn{i}"] = doc
    tags = (s.code, "release-notes")
    for i in range(2):
        values = s.values() | {"version": s.version(i), "feature": s.features[i], "n": i,
                               "slug": s.version(i).replace(".", "-")}
        added = notes["added"]
        s.facts[f"feature{i}"] = world.declared_fact(added, [s.docs[f"rn{i}"]], tags,
                                                     key=f"{s.code}-{fill(added['key'], **values)}",
                                                     kind=fill(added["kind"], **values), subject=s.name, **values)
    values = s.values() | {"version": s.version(2), "feature": s.features[2], "timeout": t2}
    _facts(world, s, notes, s.docs["rn2"], tags, **values)
    _traps(world, s, notes, s.docs["rn1"], "old", **s.values() | {"timeout": t1})


def _variants(world: World) -> None:
    """Near-duplicates (wiki copies, staging twins, release candidates, drafts) and superseded versions."""
    rng, texts = world.rng, prose("services")
    order = list(world.services)
    rng.shuffle(order)
    near_rollback, old_rollback = order[:6], order[6:]
    order = list(world.services)
    rng.shuffle(order)
    old_failover, draft_failover = order[:3], order[3:6]
    rc_notes = rng.sample(world.services, 6)
    rollback = texts["rollback"]
    for s in near_rollback:
        production = s.values() | {"command": fill(rollback["command"], **s.values()),
                                   "smoke": fill(rollback["smoke"], **s.values()), "approval": rollback["approval"],
                                   "copied": draw_date(rng, 2026, (4, 9))}
        section = texts["wiki_copy"]
        wiki = world.doc("wk", fill(section["title"], **production), fill(section["text"], **production),
                         topics=(s.code, "rollback"))
        s.docs["wiki"] = wiki
        for kind in ("rb-cmd", "rb-trigger", "rb-smoke", "rb-duration"):
            s.facts[kind].docs = s.facts[kind].docs + (wiki,)
        section = texts["staging"]
        values = s.values() | {
            "err": rng.choice([e for e in (0.5, 1, 2, 5, 10) if e != s.err]),
            "err_minutes": rng.choice([m for m in (3, 5, 10, 15) if m != s.err_minutes]),
            "duration": rng.choice([d for d in (5, 6, 25, 30) if d != s.duration]),
        }
        values |= {"env": section["env"], "command": fill(section["command"], **values),
                   "smoke": fill(section["smoke"], **values), "approval": section["approval"]}
        text = _text(world, rollback["texts"], **values)
        twin = world.doc("rb", fill(section["title"], **values), text, topics=(s.code, "rollback"), version="v2")
        s.docs["staging"] = twin
        _traps(world, s, section, twin, "stg", **values)
    for s in old_rollback:
        section = texts["rollback_superseded"]
        values = s.values() | {
            "err": rng.choice([e for e in (1, 2, 3, 5) if e != s.err]),
            "err_minutes": rng.choice([m for m in (5, 10, 15) if m != s.err_minutes]),
            "duration": rng.choice([d for d in (25, 30, 40) if d != s.duration]),
        }
        values["superseded_on"] = draw_date(rng, 2026, (1, 3))
        old = world.doc("rb", fill(section["title"], **values), fill(section["text"], **values),
                        topics=(s.code, "rollback"), version="v1")
        s.docs["rollback-old"] = old
        _traps(world, s, section, old, "old", **values)
    for s in old_failover:
        section = texts["failover_superseded"]
        values = s.values() | {"standby": rng.choice([r for r in prose("company")["regions"]
                                                      if r not in (s.region, s.standby)]),
                               "rto": s.rto * 2, "ttl": s.ttl * 5}
        values["superseded_on"] = draw_date(rng, 2026, (2, 6))
        old = world.doc("rb", fill(section["title"], **values), fill(section["text"], **values),
                        topics=(s.code, "failover"), version="v2")
        s.docs["failover-old"] = old
        _traps(world, s, section, old, "old", **values)
    for s in draft_failover:
        section = texts["failover_draft"]
        values = s.values() | {"standby": rng.choice([r for r in prose("company")["regions"]
                                                      if r not in (s.region, s.standby)]),
                               "rto": max(10, s.rto - 5)}
        draft = world.doc("rb", fill(section["title"], **values), fill(section["text"], **values),
                          topics=(s.code, "failover"), version="v4-draft")
        s.docs["failover-draft"] = draft
        for kind in ("fo-ttl", "fo-lag", "fo-rpo"):
            s.facts[kind].contested = True   # the draft repeats them, and rubric-3 does not accept drafts
        _traps(world, s, section, draft, "draft", **values)
    for s in rc_notes:
        section = texts["release_candidate"]
        flag = f"{s.code}_" + next(w for w in re.split(r"[^a-z0-9]+", s.features[2].lower()) if len(w) > 3)
        values = s.values() | {"version": s.version(2), "feature": s.features[2], "flag": flag,
                               "removal": f"{s.major}.{s.minor + 3}", "published": draw_date(rng, 2026, (7, 7))}
        rc = world.doc("rn", fill(section["title"], **values), fill(section["text"], **values),
                       topics=(s.code, "release-notes"), version=f"{s.version(2)}-rc1")
        s.docs["rc"] = rc
        _traps(world, s, section, rc, "rc", **values)
