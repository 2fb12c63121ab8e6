"""Postmortems (some with a status-page summary that counts another duration), security incidents
(a restricted report and a public summary each) and the other restricted documents, from
``prose/incidents.toml``."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .model import draw_date
from .prose import fill, prose

if TYPE_CHECKING:
    from .world import World


def add_postmortems(world: World) -> None:
    rng, texts = world.rng, prose("incidents")
    kinds, postmortem, status_page = texts["incidents"], texts["postmortem"], texts["status_page"]
    services = [rng.choice(world.services) for _ in range(12)]
    with_status = set(rng.sample(range(12), 8))
    for n, s in enumerate(services):
        incident = kinds[n % len(kinds)]
        serial = n * 3 + 11
        values = {"name": s.name, "code": s.code, "team": s.team, "title": incident["title"],
                  "number": fill(postmortem["number"], serial=serial), "date": draw_date(rng, 2026, (1, 9)),
                  "duration": rng.randint(25, 160), "detect": rng.randint(2, 12), "due": draw_date(rng, 2026, (10, 12)),
                  "sev": 1 if s.tier == 1 else 2, "what": fill(incident["what"], name=s.name),
                  "cause": incident["cause"], "action": incident["action"]}
        values["cause_long"] = fill(incident["cause_long"], code=s.code, pool=rng.choice((50, 100, 200)),
                                    lock=rng.randint(12, 30))
        doc = world.doc("pm", fill(postmortem["title"], **values), fill(postmortem["text"], **values),
                        topics=(s.code, "postmortems"))
        key = fill(postmortem["key"], serial=serial)
        facts = {spec["key"]: world.declared_fact(spec, [doc], (s.code, "postmortem"), key=f"{key}-{spec['key']}",
                                                  **values)
                 for spec in postmortem["facts"]}
        record: dict[str, object] = {"service": s, "doc": doc, "facts": facts, "date": values["date"],
                                     "number": values["number"]}
        if n in with_status:
            duration = int(values["duration"])
            shown = duration - rng.randint(8, 20) if duration > 40 else duration + rng.randint(5, 15)
            start_h, start_m = rng.randint(0, 20), rng.choice((0, 5, 10, 15, 20, 30, 40, 45, 50))
            end = start_h * 60 + start_m + shown
            values |= {"shown": shown, "start": f"{start_h:02d}:{start_m:02d}",
                       "end": f"{end // 60 % 24:02d}:{end % 60:02d}", "impact": rng.choice(status_page["impacts"])}
            status = world.doc("st", fill(status_page["title"], **values), fill(status_page["text"], **values),
                               topics=(s.code, "postmortems", "status-page"))
            record["status"] = status
            world.trap(facts["duration"], status, "alt", fill(status_page["wrong"], **values))
        world.postmortems.append(record)


def add_restricted(world: World) -> None:
    rng, texts = world.rng, prose("incidents")
    security = texts["security"]
    for i, incident in enumerate(security["incidents"], 1):
        number = f"SEC-2026-{i:02d}"
        values = {"number": number, "date": draw_date(rng, 2026, (2, 9)), "title": incident["title"],
                  "secret": incident["secret"], "public": incident["public"]}
        told = [fill(spec["text"], n=number) for spec in incident["facts"] if not spec.get("restricted")]
        report = fill(security["report"], **values) + "".join(" " + text for text in told)
        sec = world.doc("sec", fill(security["report_title"], **values), report, topics=(), access=("security",))
        summary = fill(security["summary"], **values) + " ".join(told) + security["summary_end"]
        pub = world.doc("pm", fill(security["summary_title"], **values), summary, topics=("security", "postmortems"))
        facts = [world.declared_fact(spec | {"critical": spec.get("restricted", False)},
                                     [sec] if spec.get("restricted") else [pub], ("security", "incident"),
                                     key=f"sec{i:02d}-{spec['key']}", kind="security", n=number)
                 for spec in incident["facts"]]
        world.security.append({"number": number, "sec": sec, "pub": pub, "facts": facts})
    for spec in texts["restricted"]:
        doc = world.doc(spec["prefix"], spec["title"], spec["text"], topics=(), access=spec["access"])
        world.restricted_facts += [world.declared_fact(fact, [doc], ()) for fact in spec.get("facts", [])]
