"""The corpus, written in one fixed order from one random stream: the services' documents (`services`),
the policies (`policies`), the on-call pages (`oncall`), the postmortems and the restricted documents
(`incidents`)."""
from __future__ import annotations

import random

from . import incidents, oncall, policies, services
from .world import World


def build_world(rng: random.Random) -> World:
    """The demo's corpus and facts, drawn from `rng` (the order of the calls is part of the output)."""
    world = World(rng)
    services.add_services(world)
    policies.add_policies(world)
    oncall.add_oncall(world)
    incidents.add_postmortems(world)
    incidents.add_restricted(world)
    return world
