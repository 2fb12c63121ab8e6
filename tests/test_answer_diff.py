"""The two answers' word-level diff and changed citations."""
from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from scoring.decide.answer_diff import citation_change, diff_html, word_diff


def test_a_changed_number_and_a_dropped_word_stand_out():
    before = "Deploys need two reviewers, not one."
    after = "Deploys need three reviewers, one."
    assert word_diff(before, after) == [
        ("same", "Deploys need "), ("removed", "two"), ("added", "three"), ("same", " reviewers, "),
        ("removed", "not "), ("same", "one.")]


def test_two_different_sentences_read_as_one_replaced_not_word_by_word_between_spaces():
    assert word_diff("Deploys of tier-1 services need two reviewers. [pol-0007]",
                     "Every production deploy needs one reviewer. [pol-0008]") == [
        ("removed", "Deploys of tier-1 services need two reviewers"),
        ("added", "Every production deploy needs one reviewer"), ("same", ". ["), ("removed", "pol-0007"),
        ("added", "pol-0008"), ("same", "]")]


def test_a_citation_id_a_version_and_a_date_change_as_one_word():
    assert word_diff("See pol-0007, v2.1, 2026-11-02.", "See pol-0008, v2.2, 2026-11-03.") == [
        ("same", "See "), ("removed", "pol-0007"), ("added", "pol-0008"), ("same", ", "), ("removed", "v2.1"),
        ("added", "v2.2"), ("same", ", "), ("removed", "2026-11-02"), ("added", "2026-11-03"), ("same", ".")]


def test_a_removed_and_an_added_run_never_read_as_one_word():
    out = diff_html(word_diff("two reviewers. Every deploy", "one reviewer. Every deploy"))
    text = re.sub(r"<[^>]+>", "", out)
    assert "tworeviewers" not in text and "two reviewers one reviewer" in text
    assert re.sub(r"<[^>]+>", "", diff_html(word_diff("Deploys need two", "Every deploy needs"))) == (
        "Deploys need two Every deploy needs")


def test_a_missing_answer_is_the_empty_text():
    assert word_diff(None, "Now answered.") == [("added", "Now answered.")]
    assert word_diff("Was answered.", None) == [("removed", "Was answered.")]
    assert word_diff(None, None) == []


@given(st.text(max_size=60), st.text(max_size=60))
def test_the_diff_rebuilds_both_answers(before, after):
    segments = word_diff(before, after)
    assert "".join(t for op, t in segments if op != "added") == before
    assert "".join(t for op, t in segments if op != "removed") == after
    assert all(a[0] != b[0] for a, b in zip(segments, segments[1:]))  # neighbours of one kind are joined


def test_citations_dropped_added_and_kept_in_first_cited_order():
    change = citation_change([["pol-0007"], ["rb-0003", "pol-0007"]], [["pol-0008"], ["rb-0003"]])
    assert (change.dropped, change.added, change.kept) == (("pol-0007",), ("pol-0008",), ("rb-0003",))


def test_the_html_escapes_the_answers():
    out = diff_html(word_diff("<b>x</b>", "<i>x</i>"))
    assert re.findall(r"</?(\w+)", out) == ["del", "del", "ins", "ins"] * 2  # no tag but the diff's own
    assert out.startswith("&lt;<del") and "&gt;x&lt;/" in out
