"""Slices are declared once: the SQL form, the mask and the codes derived from one declaration agree."""
from __future__ import annotations

import duckdb
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.errors import ValidationError
from scoring.metrics import slices

questions = st.lists(
    st.fixed_dictionaries({
        "type": st.sampled_from(["lookup", "multi", "outdated"]),
        "split": st.sampled_from(["dev", "heldout"]),
        "critical": st.booleans(),
        "answerable": st.booleans(),
        "tags": st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=2),
    }),
    min_size=1, max_size=12,
).map(pd.DataFrame)


@given(questions)
def test_sql_mask_and_codes_put_every_question_in_the_same_slice(frame):
    con = duckdb.connect()
    con.register("q", frame)
    for name in slices.PARTITIONS:
        family = slices.family(name)
        by_sql = [row[0] for row in con.execute(f"SELECT {family.sql('q')} FROM q").fetchall()]
        codes, names = slices.codes(frame, name)
        assert [str(n) for n in names.take(codes)] == by_sql
        for value in set(by_sql):
            chosen = slices.parse_slice(value if not family.valued else f"{name}:{value}")
            assert chosen.family is family
            assert list(slices.mask(frame, chosen)) == [v == value for v in by_sql]
    for s in slices.default_slices(frame):
        assert slices.family_of(str(s)) == s.family.name
    critical = slices.mask(frame, slices.parse_slice("critical"))
    assert list(critical) == list(frame["critical"])
    for tag in slices.values(frame, "tag"):
        assert list(slices.mask(frame, slices.Slice("tag", tag))) == [tag in tags for tags in frame["tags"]]


def test_the_families_and_their_names():
    assert slices.PARTITIONS == ("all", "answerable", "type", "split")  # what slice_sums stores
    assert slices.PLAIN == ("all", "answerable", "unanswerable", "critical")
    assert slices.family("answerability") is slices.family("answerable")  # the name older links carry
    assert slices.family_of("unanswerable") == "answerable" and slices.family_of("type:lookup") == "type"
    frame = pd.DataFrame({"type": ["b", "a", "b"], "split": ["heldout", "dev", "x"], "critical": [True] * 3,
                          "answerable": [True, False, True], "tags": [[], [], []]})
    assert [str(s) for s in slices.default_slices(frame)] == [
        "all", "answerable", "unanswerable", "critical", "type:b", "type:a", "split:dev", "split:heldout", "split:x"]


@pytest.mark.parametrize("text", ["everything", "type:", "tag", "critical:yes", "answerability"])
def test_a_bad_slice_name_names_the_accepted_forms(text):
    with pytest.raises(ValidationError, match="a slice is all, answerable, unanswerable, critical, type:<type>, "
                                              "split:<split> or tag:<tag>"):
        slices.parse_slice(text)
