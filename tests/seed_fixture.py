"""The grounded-test-set seed's fixture: five fictional notes, four questions, systems A and B."""

CORPUS = {
    "launch": "The fictional release window starts on Monday.",
    "rollback": "Switch traffic back to the previous version.",
    "checklist": "After rollback, run the smoke test.",
    "owners": "The fictional Aurora team owns the alert.",
    "archive": "An old planning note discusses a retired project.",
}
CASES = {
    "launch": {"question": "When does the release window start?", "relevant": ("launch",),
               "support": {"monday": ("launch",)}},
    "rollback": {"question": "What are the two rollback actions?", "relevant": ("rollback", "checklist"),
                 "support": {"switch": ("rollback",), "smoke": ("checklist",)}},
    "owner": {"question": "Who owns the alert?", "relevant": ("owners",), "support": {"aurora": ("owners",)}},
    "region": {"question": "Which region hosts the backup?", "relevant": (), "support": {}},
}
RUNS = {
    "launch": {
        "A": {"retrieved": ("launch", "archive"), "claims": (("monday", ("launch",)),)},
        "B": {"retrieved": ("launch", "archive"), "claims": (("monday", ("launch",)), ("bonus", ("launch",)))},
    },
    "rollback": {
        "A": {"retrieved": ("rollback",), "claims": (("switch", ("rollback",)),)},
        "B": {"retrieved": ("rollback", "checklist"),
              "claims": (("switch", ("rollback",)), ("smoke", ("checklist",)))},
    },
    "owner": {
        "A": {"retrieved": ("archive", "owners"), "claims": (("aurora", ("archive",)),)},
        "B": {"retrieved": ("owners", "archive"), "claims": (("aurora", ("owners",)),)},
    },
    "region": {
        "A": {"retrieved": ("archive",), "claims": (("region", ("archive",)),)},
        "B": {"retrieved": (), "claims": ()},
    },
}

EXPECTED_TABLE = """\
case system | P@2 R@2 RR@2 support coverage abstention
launch A | 0.50 1.00 1.00 1.00 1.00 n/a
launch B | 0.50 1.00 1.00 0.50 1.00 n/a
rollback A | 0.50 0.50 1.00 1.00 0.50 n/a
rollback B | 1.00 1.00 1.00 1.00 1.00 n/a
owner A | 0.50 1.00 0.50 0.00 0.00 n/a
owner B | 0.50 1.00 1.00 1.00 1.00 n/a
region A | n/a n/a n/a 0.00 n/a no
region B | n/a n/a n/a n/a n/a yes
"""
