"""Per-question deltas of one metric: both sides' values, candidate - baseline and the status of
every question of the suite (from the shared `Pair`), filtered, in the order asked for, with the
IDs, text and tags of the rows shown only. Statuses, what scored worse and the worst-first order
come from `scoring.decide.change`; which regressions may be label gaps from `scoring.decide.pool`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from scoring.decide import change
from scoring.decide import scores as scoring_scores
from scoring.decide.pool import label_gaps
from scoring.decide.sides import Side
from scoring.metrics import BY_KEY

from .database import allowed_metric, query, query_uncached
from .pair import STATUSES, Pair, pair_of, questions_of

DELTA_ROWS = 1_000
"""`question_deltas` returns at most this many questions (in the chosen order) unless told otherwise."""

DELTA_COLUMNS = ("question_id", "position", "text", "type", "split", "critical", "tags", "answerable", "disputed",
                 "baseline", "candidate", "delta", "status", "label_gap")
ORDERS = ("worst first", "best first", "suite order")


@dataclass(frozen=True)
class Deltas:
    """`rows`: at most `limit` questions (`DELTA_COLUMNS`) in the chosen order; `matched`: the
    questions the filters keep; `total`: the suite's questions; `counts`: per status, the questions
    every filter but the status filter keeps (None where not counted)."""

    rows: pd.DataFrame
    matched: int
    total: int
    counts: dict[str, int] | None = None


def question_facets(suite: str) -> tuple[list[str], list[str], list[str]]:
    """The suite's question types, splits and tags, each sorted: the choices of the deltas filters."""
    q = questions_of(suite)  # its categories are the distinct types and splits, sorted; shared with the deltas
    tags = query("SELECT DISTINCT unnest(tags) AS tag FROM questions WHERE suite = ? ORDER BY tag", [suite])
    return [str(t) for t in q["type"].cat.categories], [str(t) for t in q["split"].cat.categories], list(tags["tag"])


def _matching(suite: str, search: str) -> np.ndarray:
    """Positions of the questions whose ID or text contains `search`, case-insensitively."""
    needle = search.lower()
    found = query("SELECT position FROM questions WHERE suite = ? AND (contains(lower(question_id), ?) "
                  "OR contains(lower(text), ?))", [suite, needle, needle])
    return found["position"].to_numpy(dtype=np.int64)


def _details(suite: str, positions: np.ndarray) -> dict[int, tuple[str, str, list[str], str | None]]:
    """(question_id, text, tags, disputed) of the questions at these positions, by position (joined
    to the list of positions: the join's filter on the scan reads text and tags of those rows only;
    an `IN (...)` list of the same positions took twice as long on 200,000 questions)."""
    if not len(positions):
        return {}
    wanted = [int(p) for p in positions]
    columns = "q.position, q.question_id, q.text, q.tags, q.disputed"
    found = query_uncached(f"SELECT {columns} FROM questions q JOIN (SELECT unnest(?::INTEGER[]) AS position) p "
                            "ON p.position = q.position WHERE q.suite = ?", [wanted, suite])
    return {int(p): (str(i), t, [str(x) for x in (tags if tags is not None else [])], None if pd.isna(d) else str(d))
            for p, i, t, tags, d in zip(found["position"], found["question_id"], found["text"], found["tags"],
                                         found["disputed"])}


def _delta_rows(suite: str, q: pd.DataFrame, pair: Pair, metric: str, at: np.ndarray) -> pd.DataFrame:
    """`DELTA_COLUMNS` for the questions `q` at slots `at` (in that order) on `metric`."""
    shown = q.take(at)  # the few rows first: IDs, text and tags are read for them only
    positions = shown["position"].to_numpy()
    details = _details(suite, positions)
    found = [details.get(int(p), (None, None, [], None)) for p in positions]
    b, c = pair.side(0, metric).take(at), pair.side(1, metric).take(at)
    frame = pd.DataFrame({
        "question_id": np.array([f[0] for f in found], dtype=object),
        "position": positions,
        "text": [f[1] for f in found],
        "type": shown["type"].to_numpy(dtype=object),
        "split": shown["split"].to_numpy(dtype=object),
        "critical": shown["critical"].to_numpy(dtype=bool),
        "tags": [f[2] for f in found],
        "answerable": shown["answerable"].to_numpy(dtype=bool),
        "disputed": np.array([f[3] for f in found], dtype=object),
        "baseline": b,
        "candidate": c,
        "delta": c - b,
        "status": np.array(STATUSES, dtype=object).take(pair.codes(metric).take(at)),
        "label_gap": _label_gaps(pair, metric).take(at),
    })
    return frame[list(DELTA_COLUMNS)]


def _label_gaps(pair: Pair, metric: str) -> np.ndarray:
    """Per question, whether its regression on `metric` may be a label gap (`scoring.decide.pool.label_gaps`,
    on the candidate's Judged@k as read; n/a where it was not read)."""
    judged = pair.side(1, "judged") if "judged" in pair.metrics else np.full(len(pair.missing), np.nan)
    return label_gaps(pair.codes(metric), judged)


def _slots(q: pd.DataFrame, positions: np.ndarray) -> np.ndarray:
    """Which questions of `q` (suite order) are at these positions, as a boolean per question."""
    found = scoring_scores.position_slots(q["position"].to_numpy(), positions)
    hit = np.zeros(len(q), dtype=bool)
    hit[found[found >= 0]] = True
    return hit


def _kept(suite: str, q: pd.DataFrame, pair: Pair, metric: str, *, types: Sequence[str], answerable: bool | None,
          splits: Sequence[str],
          critical: bool | None, tags: Sequence[str], statuses: Sequence[str], search: str,
          picked: Sequence[str], label_gap: bool = False) -> np.ndarray:
    keep = np.ones(len(q), dtype=bool)
    if label_gap:
        keep &= _label_gaps(pair, metric)
    if types:
        keep &= q["type"].isin(list(types)).to_numpy()
    if answerable is not None:
        keep &= q["answerable"].to_numpy() == answerable
    if splits:
        keep &= q["split"].isin(list(splits)).to_numpy()
    if critical is not None:
        keep &= q["critical"].to_numpy() == critical
    if tags:
        found = query("SELECT position FROM questions WHERE suite = ? AND list_has_any(tags, ?::VARCHAR[])",
                      [suite, sorted(set(tags))])
        keep &= _slots(q, found["position"].to_numpy(dtype=np.int64))
    if statuses:
        keep &= np.isin(pair.codes(metric), [STATUSES.index(s) for s in statuses if s in STATUSES])
    if search:
        keep &= _slots(q, _matching(suite, search))
    if picked:
        found = query("SELECT position FROM questions WHERE suite = ? AND list_contains(?::VARCHAR[], question_id)",
                      [suite, sorted(set(map(str, picked)))])
        keep &= _slots(q, found["position"].to_numpy(dtype=np.int64))
    return np.flatnonzero(keep)


def question_deltas(
    suite: str, base: Side, cand: Side, metric: str, *, types: Sequence[str] = (), answerable: bool | None = None,
    splits: Sequence[str] = (), critical: bool | None = None, tags: Sequence[str] = (),
    statuses: Sequence[str] = (), search: str = "", picked: Sequence[str] = (), order: str = "worst first",
    limit: int | None = DELTA_ROWS, label_gap: bool = False, worse: bool = False,
) -> Deltas:
    """The suite's questions with the baseline and candidate value of `metric` (for a group: the
    mean over its repeats), delta = candidate - baseline and a status (`scoring.decide.change.status_codes`), filtered:
    question type in `types`, `answerable`, split in `splits`, `critical`, any tag in `tags`, status
    in `statuses`, ID or text containing `search` (case-insensitive), ID in `picked` (empty or None:
    no filter), only the regressions that may be a label gap (`label_gap`: the candidate's first k hold a
    document nobody judged), only the questions that scored worse (`worse`, `scoring.decide.change.worse`).
    `order`: worst first (`scoring.decide.change.worst_first`: worse ones first, critical before the
    others, by size of the drop), best first (gain with the registry's direction, n/a last, then suite
    order) or suite order. At most `limit` rows (None: all). `counts`: the matches per status, the
    status filter aside."""
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}")
    pair = pair_of(suite, base, cand, tuple(dict.fromkeys((allowed_metric(metric), "judged"))))
    q = questions_of(suite)
    at = _kept(suite, q, pair, metric, types=types, answerable=answerable, splits=splits, critical=critical, tags=tags,
               statuses=(), search=search, picked=picked, label_gap=label_gap)
    gain = change.gain(pair.side(0, metric), pair.side(1, metric), BY_KEY[metric].higher_is_better)
    if worse:
        at = at[change.worse(gain.take(at))]
    codes = pair.codes(metric).take(at)
    counts = {s: int(n) for s, n in zip(STATUSES, np.bincount(codes.astype(np.int64), minlength=len(STATUSES)))}
    if statuses:
        at = at[np.isin(codes, [STATUSES.index(s) for s in statuses if s in STATUSES])]
    if order == "worst first":
        shown = at.take(change.worst_first(gain.take(at), q["critical"].to_numpy(dtype=bool).take(at), at))
        shown = shown if limit is None else shown[:limit]
    elif order == "best first":
        key = -gain.take(at)
        shown = at.take(_first(np.where(np.isnan(key), np.inf, key), at, limit))
    else:
        shown = at if limit is None else at[:limit]
    return Deltas(_delta_rows(suite, q, pair, metric, shown), len(at), len(q), counts)


def _first(key: np.ndarray, tie: np.ndarray, limit: int | None) -> np.ndarray:
    """Indexes of the `limit` smallest `key`s (None: all), ordered by key, then `tie`: the head of
    `np.lexsort((tie, key))`, sorting only the entries that can be in it."""
    if limit is None or limit >= len(key):
        return np.lexsort((tie, key))
    if limit <= 0:
        return np.zeros(0, dtype=np.int64)
    bound = np.partition(key, limit - 1)[limit - 1]
    within = np.flatnonzero(key <= bound)  # every entry of the head, and the ties at its bound
    return within.take(np.lexsort((tie.take(within), key.take(within))))[:limit]


def deltas_csv(suite: str, base: Side, cand: Side, metric: str, **filters: Any) -> Callable[[], bytes]:
    """A function that returns every question `question_deltas(..., **filters)` keeps (no limit) as
    CSV: question_id, type, baseline, candidate, delta, status, critical, split, tags (joined with
    ';'), text. Nothing is read until it is called (a deferred download)."""
    filters = {k: v for k, v in filters.items() if k != "limit"}

    def build() -> bytes:
        rows = question_deltas(suite, base, cand, metric, limit=None, **filters).rows
        view = rows[["question_id", "type", "baseline", "candidate", "delta", "status", "critical", "split", "tags",
                     "text", "label_gap"]]
        view = view.assign(tags=view["tags"].map(lambda ts: ";".join(ts if ts is not None else [])))
        return view.to_csv(index=False).encode("utf-8")

    return build


def worst_regressions(suite: str, base: Side, cand: Side, metric: str, limit: int = 10) -> Deltas:
    """The questions that scored worse on `metric` (`scoring.decide.change.worse`: regressed, or
    lower because a record is missing or failed) in `scoring.decide.change.worst_first` order
    (critical ones first, then by size of the drop, then suite order); at most `limit` (`matched`:
    all of them)."""
    pair = pair_of(suite, base, cand)  # the whole pair: the release review reads it for the statistics too
    q = questions_of(suite)
    gain = change.gain(pair.side(0, allowed_metric(metric)), pair.side(1, metric), BY_KEY[metric].higher_is_better)
    at = np.flatnonzero(change.worse(gain))
    at = at.take(change.worst_first(gain.take(at), q["critical"].to_numpy(dtype=bool).take(at), at))
    return Deltas(_delta_rows(suite, q, pair, metric, at[:limit]), len(at), len(q))
