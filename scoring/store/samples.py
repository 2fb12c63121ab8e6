"""Review samples: a seeded random draw of the items an automatic judge decided, for reviewers to decide
too, so that the judge's figures can be corrected with a valid interval (`scoring.decide.ppi`).

One file per sample, beside the suite (docs/formats.md, Review samples)::

    suites/<suite>/samples/<name>.jsonl

Its first line is the draw (`formats.SAMPLE_DRAW`): the unit, the runs, the seed, the size asked for,
what it was stratified by, when, and the frame's size. Each further line is one drawn item
(`formats.SAMPLE_ITEM`) in queue order, with its stratum, the stratum's size in the frame
(`population`), how many of it were drawn (`drawn`) and so its inclusion probability
(`drawn / population`).

The frame (`frame`):

- unit `sentence`: every answer sentence of the runs whose applied alignment is automatic (a judge's
  or the lexical aligner's): the sentences whose claims rest on no reviewer;
- unit `document`: every (question, document) pair the runs ranked within their k, once, named with
  the first run (by ID) that ranked it;
- unit `question`: every (run, question) answer one or more of whose sentences rest on an automatic
  alignment: reviewing the item is aligning every sentence of the answer.

The draw (`draw`): the frame in a fixed order (run, question, then sentence or document); each stratum's
share of the size by proportional allocation, at least two items of every stratum that has two (so
that each stratum's spread can be estimated) and the rest to the stratum furthest below its
proportional share (ties by stratum name); within each stratum a simple random sample without
replacement, ``numpy.random.default_rng(seed)``, strata in name order; then the queue order is a
random permutation of all drawn items from the same generator, so that any prefix of the queue is
itself close to a stratified random sample. The same frame, size, strata and seed give the same
sample.

Reviews of a sampled item carry ``"sample": "<name>"`` (`ragslice review --sample`); only those count
as the sample's reviews. A review made outside the sample still counts as a label, never as the sample.
"""
from __future__ import annotations

import json
from collections.abc import Container, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from ..errors import Problems, invalid
from .files import iter_json_lines
from .formats import SAMPLE_DRAW, SAMPLE_ITEM, SAMPLE_STRATA, SAMPLE_UNITS, Format
from .times import now

SAMPLES = "samples"
"""The suite's folder of sample files."""
MIN_PER_STRATUM = 2
"""A stratum with at least this many items gets at least this many drawn (its spread needs two)."""


@dataclass(frozen=True)
class SampleItem:
    """One drawn item (a line of the file after the first)."""

    position: int
    stratum: str
    population: int
    drawn: int
    inclusion: float
    run_id: str
    question_id: str
    sentence: int | None = None
    text: str | None = None
    doc_id: str | None = None
    line: int = 0

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "item", "position": self.position, "stratum": self.stratum,
                               "population": self.population, "drawn": self.drawn, "inclusion": self.inclusion,
                               "run_id": self.run_id, "question_id": self.question_id}
        for name in ("sentence", "text", "doc_id"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out


@dataclass(frozen=True)
class Sample:
    """A review sample: its draw and its items in queue order."""

    name: str
    unit: str
    runs: tuple[str, ...]
    seed: int
    size: int
    strata: tuple[str, ...]
    drawn_at: str
    population: int
    items: tuple[SampleItem, ...] = field(default=())
    path: str = ""

    def header(self) -> dict[str, Any]:
        return {"kind": "draw", "name": self.name, "unit": self.unit, "runs": list(self.runs), "seed": self.seed,
                "size": self.size, "strata": list(self.strata), "drawn_at": self.drawn_at,
                "population": self.population}

    def text(self) -> str:
        """The file's content: the draw, then one line per item."""
        lines = [self.header(), *(item.as_json() for item in self.items)]
        return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def sample_files(suite_folder: Path) -> list[Path]:
    """The suite's sample files, by name."""
    folder = suite_folder / SAMPLES
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


def _check(obj: dict[str, Any], declared: Format, add: Any) -> bool:
    """Each field of `obj` by its declaration (`formats`): unknown keys, missing required fields, values
    of the wrong kind; whether none was found."""
    found = False
    for key in obj:
        if key not in declared.names and not key.startswith("x_"):
            add(f"unknown field of a {declared.name} (allowed: {', '.join(declared.names)}; prefix extensions "
                "with x_)", key, obj[key])
            found = True
    for f in declared.fields:
        if f.name not in obj:
            if f.missing is not None:
                add(f.missing, f.name, None)
                found = True
        elif not f.fits()(obj[f.name]):
            add(f.rule, f.name, obj[f.name])
            found = True
    return not found


def read_sample(path: Path, problems: Problems, questions: Container[str] | None = None,
                suite: str = "") -> Sample | None:
    """A sample file checked line by line (problems recorded with file and line; None when any is found):
    every field by `formats.SAMPLE_DRAW` / `SAMPLE_ITEM`, the name equal to the file's, positions 1, 2, ...
    in order, each item once, of a run of the draw and (with `questions`) a question of the suite, the
    fields of its unit, and each stratum's `population`, `drawn` and `inclusion` consistent."""
    before = len(problems.items)
    where = str(path)
    draw: dict[str, Any] | None = None
    items: list[SampleItem] = []
    seen: set[tuple] = set()
    strata: dict[str, tuple[int, int, int]] = {}  # stratum -> (population, drawn, first line)
    counts: dict[str, int] = {}
    for number, obj in iter_json_lines(path, problems):
        question = obj.get("question_id") if isinstance(obj.get("question_id"), str) else None

        def add(rule: str, name: str | None, value: Any = ..., number: int = number,
                question: str | None = question) -> None:
            problems.add(rule, name, value, path=where, line=number, question=question)

        if draw is None:
            if _check(obj, SAMPLE_DRAW, add):
                draw = obj
                if obj["name"] != path.stem:
                    add(f"must equal the file's name {path.stem!r}", "name", obj["name"])
                if len(set(obj["strata"])) < len(obj["strata"]):
                    add("a stratum variable appears twice", "strata", obj["strata"])
                if not obj["runs"]:
                    add("expected at least one run", "runs", obj["runs"])
            else:
                draw = {}
            continue
        if not _check(obj, SAMPLE_ITEM, add):
            continue
        position = len(items) + 1
        if obj["position"] != position:
            add(f"expected position {position}: items are numbered 1, 2, ... in queue order", "position",
                obj["position"])
        if draw and obj["run_id"] not in draw["runs"]:
            add(f"is not a run of the draw ({', '.join(draw['runs'])})", "run_id", obj["run_id"])
        if questions is not None and obj["question_id"] not in questions:
            add(f"is not a question of suite {suite!r}", "question_id", obj["question_id"])
        unit = draw.get("unit") if draw else None
        if unit == "sentence" and ("sentence" not in obj or "text" not in obj or "doc_id" in obj):
            add("a sentence item gives sentence and text (and no doc_id)", "sentence" if "sentence" not in obj
                else "text" if "text" not in obj else "doc_id", obj.get("sentence", ...))
        if unit == "document" and ("doc_id" not in obj or "sentence" in obj or "text" in obj):
            add("a document item gives doc_id (and no sentence or text)", "doc_id", obj.get("doc_id"))
        if unit == "question" and any(name in obj for name in ("sentence", "text", "doc_id")):
            extra = next(name for name in ("sentence", "text", "doc_id") if name in obj)
            add("a question item gives run_id and question_id only (no sentence, text or doc_id)", extra, obj[extra])
        key = (obj["run_id"], obj["question_id"], obj.get("sentence"), obj.get("doc_id"))
        if unit == "document":
            key = (obj["question_id"], obj.get("doc_id"))
        if key in seen:
            add("this item was drawn twice: an item appears once in a sample", "question_id", obj["question_id"])
        seen.add(key)
        stratum, population, drawn = obj["stratum"], obj["population"], obj["drawn"]
        known = strata.setdefault(stratum, (population, drawn, number))
        if known[:2] != (population, drawn):
            add(f"stratum {stratum!r} has population {known[0]} and drawn {known[1]} on line {known[2]}",
                "population" if known[0] != population else "drawn", obj["population" if known[0] != population
                                                                         else "drawn"])
        if drawn > population:
            add("a stratum cannot have more items drawn than it holds", "drawn", drawn)
        elif abs(obj["inclusion"] - drawn / population) > 1e-9:
            add(f"expected drawn / population = {drawn / population!r}", "inclusion", obj["inclusion"])
        counts[stratum] = counts.get(stratum, 0) + 1
        items.append(SampleItem(obj["position"], stratum, population, drawn, float(obj["inclusion"]), obj["run_id"],
                                obj["question_id"], obj.get("sentence"), obj.get("text"), obj.get("doc_id"), number))
    if draw is None and len(problems.items) == before:
        problems.add("a sample file starts with its draw line", path=where)
    for stratum, (population, drawn, line) in strata.items():
        if counts[stratum] != drawn:
            problems.add(f"stratum {stratum!r} says {drawn} items were drawn, the file holds {counts[stratum]}",
                         "drawn", drawn, path=where, line=line)
    if draw and sum(p for p, _, _ in strata.values()) > draw["population"]:
        problems.add("the strata hold more items than the frame", "population", draw["population"], path=where,
                     line=1)
    if len(problems.items) > before or not draw:
        return None
    return Sample(draw["name"], draw["unit"], tuple(draw["runs"]), draw["seed"], draw["size"], tuple(draw["strata"]),
                  draw["drawn_at"], draw["population"], tuple(items), where)


def read_samples(suite_folder: Path, problems: Problems, questions: Container[str] | None = None,
                 suite: str = "") -> dict[str, Sample]:
    """Every sample file of the suite, checked (`read_sample`), by name."""
    out = {}
    for path in sample_files(suite_folder):
        found = read_sample(path, problems, questions, suite)
        if found is not None:
            out[found.name] = found
    return out


# --- drawing ------------------------------------------------------------------------------------------

FRAME_SQL = {
    "sentence": """
        SELECT a.run_id, a.question_id, a.sentence, a.text, NULL::VARCHAR AS doc_id, q.type, q.answerable
        FROM alignments a
        JOIN runs r ON r.run_id = a.run_id
        JOIN questions q ON q.suite = r.suite AND q.question_id = a.question_id
        WHERE a.applied AND a.aligner <> 'human' AND list_contains(?::VARCHAR[], a.run_id)
        ORDER BY a.run_id, a.question_id, a.sentence""",
    "document": """
        SELECT min(t.run_id) AS run_id, t.question_id, NULL::INTEGER AS sentence, NULL::VARCHAR AS text, t.doc_id,
               any_value(q.type) AS type, any_value(q.answerable) AS answerable
        FROM retrieved t
        JOIN runs r ON r.run_id = t.run_id
        JOIN questions q ON q.suite = r.suite AND q.question_id = t.question_id
        WHERE t.visible AND list_contains(?::VARCHAR[], t.run_id)
        GROUP BY t.question_id, t.doc_id
        ORDER BY t.question_id, t.doc_id""",
    "question": """
        SELECT a.run_id, a.question_id, NULL::INTEGER AS sentence, NULL::VARCHAR AS text, NULL::VARCHAR AS doc_id,
               any_value(q.type) AS type, any_value(q.answerable) AS answerable
        FROM alignments a
        JOIN runs r ON r.run_id = a.run_id
        JOIN questions q ON q.suite = r.suite AND q.question_id = a.question_id
        WHERE a.applied AND a.aligner <> 'human' AND list_contains(?::VARCHAR[], a.run_id)
        GROUP BY a.run_id, a.question_id
        ORDER BY a.run_id, a.question_id""",
}
"""The frame of each unit (module docstring), in the fixed order the draw indexes."""


def stratum_name(strata: Sequence[str], row: dict[str, Any]) -> str:
    """An item's stratum: `variable=value` for each stratum variable, joined by `|` ('' without strata)."""
    values = {"type": lambda: str(row["type"]), "answerable": lambda: "yes" if row["answerable"] else "no",
              "run": lambda: str(row["run_id"])}
    return "|".join(f"{s}={values[s]()}" for s in strata)


def allocate(sizes: dict[str, int], size: int) -> dict[str, int]:
    """Items to draw per stratum (module docstring): at least `MIN_PER_STRATUM` of each that holds that
    many (when the size allows), the rest to the stratum furthest below its proportional share."""
    total = sum(sizes.values())
    if size >= total:
        return dict(sizes)
    names = sorted(sizes)
    out = {s: 0 for s in names}
    floor = {s: min(MIN_PER_STRATUM, sizes[s]) for s in names}
    if sum(floor.values()) <= size:
        out = dict(floor)
    share = {s: size * sizes[s] / total for s in names}
    while sum(out.values()) < size:
        open_ = [s for s in names if out[s] < sizes[s]]
        best = max(open_, key=lambda s: (share[s] - out[s], -names.index(s)))
        out[best] += 1
    return out


def draw(con: duckdb.DuckDBPyConnection, runs: Sequence[str], *, unit: str, size: int, strata: Sequence[str] = (),
         seed: int = 0, name: str = "sample") -> Sample:
    """Draw a sample from the frame of `runs` in the database (module docstring). ValidationError when
    the unit, strata or size are not ones a sample can have, or the frame is empty."""
    if unit not in SAMPLE_UNITS:
        raise invalid(f"expected one of {', '.join(SAMPLE_UNITS)}", "--unit", unit)
    unknown = [s for s in strata if s not in SAMPLE_STRATA]
    if unknown or len(set(strata)) < len(strata):
        raise invalid(f"strata are some of {', '.join(SAMPLE_STRATA)}, each once", "--strata", ",".join(strata))
    if type(size) is not int or size < 1:
        raise invalid("a sample holds at least one item", "--size", size)
    if seed < 0:
        raise invalid("a seed is a whole number >= 0", "--seed", seed)
    rows = con.execute(FRAME_SQL[unit], [list(runs)]).df().to_dict(orient="records")
    return draw_from_frame(rows, runs, unit=unit, size=size, strata=strata, seed=seed, name=name)


def draw_from_frame(rows: list[dict[str, Any]], runs: Sequence[str], *, unit: str, size: int,
                    strata: Sequence[str] = (), seed: int = 0, name: str = "sample",
                    drawn_at: str | None = None) -> Sample:
    """The draw of `draw` from a frame given as rows (run_id, question_id, sentence, text, doc_id, type,
    answerable) in the frame's fixed order (`FRAME_SQL`)."""
    if not rows:
        what = {"sentence": "answer sentence resting on an automatic alignment",
                "question": "answer resting on an automatic alignment"}.get(unit, "document ranked within k")
        raise invalid(f"the runs have no {what}: nothing to sample", "--runs", ",".join(runs))
    by_stratum: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_stratum.setdefault(stratum_name(strata, row), []).append(i)
    sizes = {s: len(members) for s, members in by_stratum.items()}
    counts = allocate(sizes, size)
    rng = np.random.default_rng(seed)
    chosen: list[tuple[str, int]] = []
    for stratum in sorted(by_stratum):
        members = by_stratum[stratum]
        picked = rng.choice(len(members), size=counts[stratum], replace=False) if counts[stratum] else []
        chosen += [(stratum, members[int(j)]) for j in sorted(picked)]
    order = rng.permutation(len(chosen))
    items = []
    for position, j in enumerate(order, start=1):
        stratum, i = chosen[int(j)]
        row = rows[i]
        population, drawn = sizes[stratum], counts[stratum]
        items.append(SampleItem(position, stratum, population, drawn, drawn / population, str(row["run_id"]),
                                str(row["question_id"]),
                                int(row["sentence"]) if unit == "sentence" else None,
                                str(row["text"]) if unit == "sentence" else None,
                                str(row["doc_id"]) if unit == "document" else None))
    return Sample(name, unit, tuple(runs), seed, size, tuple(strata), drawn_at or now(), len(rows), tuple(items))


def write_sample(suite_folder: Path, sample: Sample) -> Path:
    """Write a new sample file (refused when one of that name exists: a drawn sample is never redrawn in
    place, since its reviews refer to it)."""
    folder = suite_folder / SAMPLES
    path = folder / f"{sample.name}.jsonl"
    if path.exists():
        raise invalid(f"a sample of this name exists ({path}); choose another --name", "--name", sample.name)
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(sample.text(), encoding="utf-8")
    return path


def sample_rows(suite: str, samples: dict[str, Sample]) -> list[tuple]:
    """The rows of the `samples` table for a suite's samples (one per item, the draw's fields repeated)."""
    return [(suite, s.name, i.line, s.unit, s.seed, list(s.runs), list(s.strata), s.size, s.drawn_at, s.population,
             i.position, i.stratum, i.population, i.drawn, i.inclusion, i.run_id, i.question_id, i.sentence, i.text,
             i.doc_id) for s in samples.values() for i in s.items]


__all__ = ["FRAME_SQL", "MIN_PER_STRATUM", "SAMPLES", "Sample", "SampleItem", "allocate", "draw", "draw_from_frame", "read_sample",
           "read_samples", "sample_files", "sample_rows", "stratum_name", "write_sample"]
