"""Manifests compared: dotted fields, an empty object as a value, and repeats that vary."""
from __future__ import annotations

from scoring.decide.manifests import ABSENT, flatten, is_setting, manifest_diff, side_fields


def test_a_manifest_flattens_to_dotted_fields_of_json_values():
    assert flatten({"model": "m", "generation": {"temperature": 0.0, "stop": ["\n"]}, "k": 5, "seed": None}) == {
        "generation.stop": '["\\n"]', "generation.temperature": "0.0", "k": "5", "model": '"m"', "seed": "null"}
    assert flatten({}) == {}


def test_an_empty_object_is_a_value_that_differs_from_a_missing_key():
    assert flatten({"reranker": {}}) == {"reranker": "{}"}
    assert manifest_diff([{"reranker": {}}], [{}]) == [("reranker", "{}", ABSENT)]
    assert manifest_diff([{"reranker": {}}], [{"reranker": {"name": "x"}}]) == [
        ("reranker", "{}", ABSENT), ("reranker.name", ABSENT, '"x"')]
    assert manifest_diff([{"reranker": {}}], [{"reranker": {}}]) == []


def test_repeats_that_differ_on_a_field_show_it_as_varying():
    repeats = [{"seed": 1, "model": "m"}, {"seed": 2, "model": "m"}, {"seed": 1, "model": "m", "top_p": 0.9}]
    assert side_fields(repeats) == {"model": '"m"', "seed": "1 | 2", "top_p": f"{ABSENT} | 0.9"}
    # the single run's seed equals one of the repeats' values, yet the field varies on the other side
    assert manifest_diff([{"seed": 1, "model": "m"}], repeats) == [("seed", "1", "1 | 2"),
                                                                    ("top_p", ABSENT, f"{ABSENT} | 0.9")]
    # repeats that agree read as their one value
    assert manifest_diff([{"model": "m"}], [{"model": "m"}, {"model": "m"}]) == []


def test_bookkeeping_is_no_setting():
    assert not is_setting("run_id") and not is_setting("repeat") and not is_setting("x_source.file")
    assert is_setting("generation.temperature") and is_setting("model")
