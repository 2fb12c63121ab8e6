"""The on-call documents and their facts, from ``prose/oncall.toml``: the handbook and its companions,
then one page per team. Some team pages state another rule than the handbook (the conflicting
questions ask about them) and some claim a service the catalog gives to another team."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .model import Service, join_names
from .prose import fill, prose

if TYPE_CHECKING:
    from .world import World


def add_oncall(world: World) -> None:
    for spec in prose("oncall")["documents"]:
        doc = world.doc("oc", spec["title"], spec["text"], topics=spec["topics"], version=spec["version"])
        facts = {}
        for fact_spec in spec["facts"]:
            fact = world.declared_fact(fact_spec, [doc], spec["tags"])
            fact.contested = fact_spec.get("contested", False)
            facts[fact.kind] = fact
        if spec.get("handbook"):
            world.handbook, world.oncall_facts = doc, facts
    _team_pages(world)


def _team_pages(world: World) -> None:
    rng, texts, conflicts = world.rng, prose("oncall")["team_page"], prose("oncall")["conflicts"]
    teams, leads = prose("company")["teams"], prose("company")["leads"]
    by_team: dict[str, list[Service]] = {}
    for s in world.services:
        by_team.setdefault(s.team, []).append(s)
    claimed = rng.sample(world.services, 3)
    for i, team in enumerate(teams):
        services = by_team.get(team, [])
        rotations = [f"`{s.code}-primary`" for s in services]
        values = {"team": team, "lead": leads[i], "channel": team.lower()}
        lines = [fill(texts["staffed"], services=join_names([s.name for s in services]),
                      rotations=join_names(rotations), plural="s" if len(rotations) > 1 else "", **values)
                 if services else fill(texts["unstaffed"], **values)]
        extra = [s for s in claimed if s.team != team and team == teams[(teams.index(s.team) + 1) % len(teams)]]
        for s in extra:
            lines.append(fill(texts["also_owns"], team=team, name=s.name))
        lines.append(conflicts[team]["says"] if team in conflicts else texts["follows"])
        lines.append(rng.choice(texts["closings"]))
        page = world.doc("oc", fill(texts["title"], team=team), " ".join(lines), topics=("oncall", "teams"),
                         version="v1")
        for s in services:
            s.facts["owner"].docs += (page,)   # "The <team> team owns <service>" supports ownership too
        for s in extra:
            world.owner_conflicts.append((s, team, page))
        if team in conflicts:
            world.team_conflicts.append((team, conflicts[team]["kind"], page, conflicts[team]["wrong"]))
    for s, team, page in world.owner_conflicts:
        world.trap(s.facts["owner"], page, "alt", fill(texts["owner_claim"], name=s.name, team=team))
