"""The company's policies and their facts, from ``prose/policies.toml``: a superseded version of a
policy is a trap for every fact it states differently."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .model import Trap
from .prose import prose

if TYPE_CHECKING:
    from .world import World


def add_policies(world: World) -> None:
    for policy in prose("policies")["policies"]:
        title, topic, topics = policy["title"], policy["topic"], ("policy", policy["topic"])
        doc = world.doc("pol", title, policy["text"], topics=topics, version=policy["version"])
        old = None
        if "superseded" in policy:
            old = world.doc("pol", f"{title} (superseded)", policy["superseded"]["text"], topics=topics,
                            version=policy["superseded"]["version"])
        if topic == "change-freeze":
            world.freeze_doc = doc
        for spec in policy["facts"]:
            fact = world.declared_fact(spec, [doc], topics)
            if "superseded" in spec:
                world.trap(fact, old, "old", spec["superseded"])
            if spec.get("unchanged"):
                # citing the superseded version for the unchanged rule states the right thing on a source
                # rubric-3 rejects
                fact.contested = True
                world.traps[fact.key] = [Trap(fact.key, old, fact.key, fact.text)]
            if "disputed" in spec:
                world.disputes[fact.key] = spec["disputed"]
