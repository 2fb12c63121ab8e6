"""Reading and validating a workspace: suites (labels) and runs (recorded outputs).

Layout (docs/formats.md):

    suites/<suite>/suite.json, documents.jsonl, questions.jsonl, chunks.jsonl (optional)
    runs/<run_id>/manifest.json, records.jsonl (or records.parquet), chunks.jsonl (optional)

Suites and manifests are checked here in Python: suite.json and manifest.json in this module, a
suite's line files (documents, chunk map, questions) by `scoring.store.suite_lines`, by the fields that
`scoring.store.formats` declares. A refresh reads a clean suite faster set-based
(`scoring.store.suite_bulk`, which leaves any doubt to the Python reader).
Records can number millions and are staged and checked with set-based SQL in
`scoring.store.records`. Every problem names file, line, question and field, and every problem in
the workspace is reported, not just the first.
"""
from __future__ import annotations

import gc
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Problems, ValidationError
from .files import _FREEZE_AT, FOLDER_NAME, gc_paused, iter_json_lines, read_json_file
from .hashes import Digest, HashCache, files_hash, hashing_ahead
from .judges import JUDGEMENTS, JUDGES_FILE, REPEATS, load_judges, read_cache, read_repeats
from .reviews import Review, apply_reviews, read_reviews, review_files
from .samples import read_samples, sample_files
from ..metrics.reference import MAX_CLAIMS
from .formats import HELDOUT, MAX_CITATIONS, MAX_LABELS, MAX_OFFSET, MAX_RETRIEVED, SPLITS
from .suite_lines import (
    UNLABELLED_CLAIM, Checker, Chunk, Document, Question, add_questions, load_chunks, load_documents,
)

__all__ = [  # the format's bounds and the suite's lines are also read from here
    "HELDOUT", "MAX_CITATIONS", "MAX_CLAIMS", "MAX_K", "MAX_LABELS", "MAX_OFFSET", "MAX_RETRIEVED", "SPLITS",
    "UNLABELLED_CLAIM", "Chunk", "Document", "Question", "Run", "Suite", "Workspace", "add_questions", "base_files",
    "discover", "load_chunks", "load_run", "load_suite", "load_workspace", "run_files", "suite_hash",
]

MAX_REPEAT = 2**31 - 1
"""The largest repeat number a manifest may give (`runs.repeat` is an INTEGER)."""
MAX_K = 100

SUITE_KEYS = {"name", "version", "corpus_version", "rubric_version", "description", "unit", "max_claims"}
UNITS = ("document", "chunk")
"""What labels name: documents (the default; retrieved and cited chunks stand for their documents) or,
in a passage-level suite, the suite's chunks (matched exactly)."""
MANIFEST_REQUIRED = (
    "run_id", "suite", "suite_version", "corpus_version", "created_at", "code_revision",
    "retrieval", "k", "prompt_revision", "model", "generation", "rubric_version",
)
MANIFEST_OPTIONAL = ("group", "repeat", "notes", "release")


@dataclass
class Suite:
    name: str
    folder: Path
    version: str
    corpus_version: str
    rubric_version: str
    description: str | None
    unit: str = "document"
    max_claims: int = MAX_CLAIMS
    """The most claims an answer may make (suite.json `max_claims`, default the format's bound): a
    record with more is refused, and pooled Support charges a failed or missing record this many."""
    documents: dict[str, Document] = field(default_factory=dict)
    questions: dict[str, Question] = field(default_factory=dict)
    chunks: dict[str, Chunk] = field(default_factory=dict)
    """The suite's chunk map (`chunks.jsonl`), empty when the suite has none."""
    files_hash: str = ""
    """Content hash of all the suite's files (`suite_hash` of its `base_hash` and its review files')."""
    base_hash: str = ""
    """Content hash of the suite's files except its review files (`base_files`)."""
    loaded: bool = True
    """False when only suite.json was read because a database already holds this exact suite, or this
    suite but for its review files (`reviews_only`)."""
    reviews_only: bool = False
    """Only suite.json was read because a database holds every file of this suite but its review files:
    the decisions can be applied to the stored suite (`scoring.store.decisions`)."""
    deferred: bool = False
    """Only suite.json (and the judges) were read: documents, chunk map, questions and review files are
    left to be read set-based into a database (`scoring.store.suite_bulk`), or in Python on any doubt."""
    review: Review | None = None
    """What the reviewers' decisions (`reviews/*.jsonl`) did to the labels, once applied."""
    judges: dict[str, Any] = field(default_factory=dict)
    """The judges of `judges.toml` in precedence order (`scoring.store.judges.Judge`)."""
    judgements: dict[str, dict[str, Any]] = field(default_factory=dict)
    """judge -> request key -> cached answer (`scoring.store.judges.CachedAnswer`), from `judgements/`."""
    repeats: dict[str, list[Any]] = field(default_factory=dict)
    """judge -> its repeated answers (`scoring.store.judges.CachedAnswer` with `repeat`), from
    `judgements/repeats/`."""
    samples: dict[str, Any] = field(default_factory=dict)
    """name -> review sample (`scoring.store.samples.Sample`), from `samples/`."""

    def doc_version(self, doc_id: str) -> str:
        """The version a document is at: its own `version`, else the suite's `corpus_version`."""
        return self.documents[doc_id].version or self.corpus_version


@dataclass
class Run:
    run_id: str
    folder: Path
    manifest: dict[str, Any]
    records_path: Path
    files_hash: str
    chunks: dict[str, Chunk] | None = None
    """The run's own chunk map (`runs/<run_id>/chunks.jsonl`); None: the suite's map applies."""

    @property
    def suite(self) -> str:
        return self.manifest["suite"]

    @property
    def k(self) -> int:
        return self.manifest["k"]


@dataclass
class Workspace:
    root: Path
    suites: dict[str, Suite]
    runs: dict[str, Run]
    hashes: HashCache = field(default_factory=HashCache)
    """The file sets' hashes, as read or as the cache gave them (the next refresh's cache)."""


# --- suites -----------------------------------------------------------------------------------


def base_files(folder: Path) -> list[Path]:
    """The files whose bytes make a suite's base hash: its own, its judges' declarations and their cached
    answers, its review samples; everything but its reviewers' decisions."""
    chunks, judges = folder / "chunks.jsonl", folder / "judges.toml"
    judgements = folder / "judgements"
    return [folder / "suite.json", folder / "documents.jsonl", folder / "questions.jsonl"] + (
        [chunks] if chunks.exists() else []) + ([judges] if judges.exists() else []) + (
        sorted(judgements.glob("*.jsonl")) if judgements.is_dir() else []) + (
        sorted((judgements / REPEATS).glob("*.jsonl")) if (judgements / REPEATS).is_dir() else []) + sample_files(folder)


def suite_hash(base: str, reviews: str) -> str:
    """A suite's content hash (`suites.files_hash`) from its base hash and its review files' hash."""
    return hashlib.blake2b(f"{base}:{reviews}".encode(), digest_size=16).hexdigest()


def load_suite(folder: Path, problems: Problems, *, known_hash: str | None = None, known_base: str | None = None,
               digest: Digest = files_hash, defer: bool = False) -> Suite | None:
    """Read and check one suite folder; problems are recorded, not raised.

    With `known_hash` equal to the files' hash (a database already holds exactly this suite), only
    suite.json is read: documents, questions and chunks stay unloaded (`Suite.loaded` is False). So
    too with `known_base` equal to the base hash (the database holds this suite but for its review
    files): `Suite.reviews_only` is then True, and the decisions are read against the stored suite.
    With `defer`, the suite is read no further than suite.json and its judges (`Suite.deferred`)."""
    meta_path = folder / "suite.json"
    before = len(problems.items)
    meta_lines: dict[str, int] = {}
    meta = read_json_file(meta_path, problems, meta_lines)
    if meta is None:
        return None
    check = Checker(problems, meta_path, None, lines=meta_lines)
    check.unknown_keys(meta, SUITE_KEYS)
    name = check.text(meta, "name")
    if name is not None and name != folder.name:
        check.add(f"must equal the folder name {folder.name!r}", "name", name)
    values = {key: check.text(meta, key) for key in ("version", "corpus_version", "rubric_version")}
    description = check.text(meta, "description", required=False, nonblank=False)
    unit = meta.get("unit", "document")
    if unit not in UNITS:
        check.add("expected 'document' (labels name documents) or 'chunk' (labels name the chunks of "
                  "chunks.jsonl)", "unit", unit)
        return None
    max_claims = meta.get("max_claims", MAX_CLAIMS)
    if type(max_claims) is not int or not 1 <= max_claims <= MAX_CLAIMS:
        check.add(f"expected a whole number from 1 to {MAX_CLAIMS}: the most claims an answer may make",
                  "max_claims", max_claims)
        return None
    if name is None or None in values.values():
        return None
    suite = Suite(name, folder, values["version"], values["corpus_version"], values["rubric_version"], description,
                  unit, max_claims)
    base = base_files(folder)
    if (known_hash is not None or defer) and all(p.exists() for p in base):
        _hash(suite, base, digest)
        if suite.files_hash == known_hash or suite.base_hash == known_base:
            suite.loaded, suite.reviews_only = False, suite.files_hash != known_hash
            return suite
        if defer:
            _load_judges(suite, problems)
            suite.samples = read_samples(folder, problems, suite=name)
            suite.loaded, suite.deferred = False, True
            return suite
    chunks_path = folder / "chunks.jsonl"
    with gc_paused():
        _load_documents(suite, folder / "documents.jsonl", problems)
        if chunks_path.exists():
            suite.chunks = load_chunks(chunks_path, suite, problems)
        elif unit == "chunk":
            problems.add("a passage-level suite (unit 'chunk') needs chunks.jsonl: its labels name those chunks",
                         path=str(chunks_path))
        _load_questions(suite, folder / "questions.jsonl", problems)
        if len(problems.items) == before:  # reviews are checked against a suite that reads cleanly
            suite.review = apply_reviews(suite, read_reviews(suite, problems), problems)
        _load_judges(suite, problems)
        suite.samples = read_samples(folder, problems, suite.questions, name)
    if len(suite.documents) + len(suite.questions) + len(suite.chunks) >= _FREEZE_AT:
        gc.freeze()
    _hash(suite, base, digest)
    return suite


def _hash(suite: Suite, base: list[Path], digest: Digest) -> None:
    """Set the suite's `base_hash` (of its `base` files) and `files_hash` (with its review files')."""
    suite.base_hash = digest(base)
    suite.files_hash = suite_hash(suite.base_hash, digest(review_files(suite.folder)))


def _load_judges(suite: Suite, problems: Problems) -> None:
    """The suite's judges (`judges.toml`), their cached answers (`judgements/<judge>.jsonl`) and repeated
    answers (`judgements/repeats/<judge>.jsonl`); a file of a judge that is not declared is a problem (its
    answers would silently count for nothing)."""
    declared = suite.folder / JUDGES_FILE
    if declared.exists():
        try:
            suite.judges = load_judges(declared)
        except ValidationError as error:
            problems.items.extend(error.problems)
    folder = suite.folder / JUDGEMENTS
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        if path.stem not in suite.judges:
            problems.add(f"answers of a judge that {JUDGES_FILE} does not declare (judges: "
                         f"{', '.join(suite.judges) or 'none'}); declare it or remove the file", path=str(path))
            continue
        suite.judgements[path.stem] = read_cache(path, problems)
    for path in sorted((folder / REPEATS).glob("*.jsonl")) if (folder / REPEATS).is_dir() else []:
        if path.stem not in suite.judges:
            problems.add(f"repeated answers of a judge that {JUDGES_FILE} does not declare (judges: "
                         f"{', '.join(suite.judges) or 'none'}); declare it or remove the file", path=str(path))
            continue
        suite.repeats[path.stem] = read_repeats(path, problems)


def _load_documents(suite: Suite, path: Path, problems: Problems) -> None:
    """Fill `suite.documents` from documents.jsonl (`suite_lines.load_documents`)."""
    load_documents(suite, path, problems)


def _load_questions(suite: Suite, path: Path, problems: Problems) -> None:
    """Fill `suite.questions` from questions.jsonl, in file order (`suite_lines.add_questions`)."""
    add_questions(suite, path, iter_json_lines(path, problems), suite.chunks if suite.unit == "chunk"
                  else suite.documents, problems)



# --- runs -------------------------------------------------------------------------------------


def load_run(folder: Path, suites: dict[str, Suite], problems: Problems,
             broken_suites: frozenset[str] = frozenset(), *, digest: Digest = files_hash) -> Run | None:
    """Read and check one run's manifest against its suite; records are checked in SQL later.

    A run of a suite in `broken_suites` (a folder whose suite.json has problems, already reported)
    is not loaded and not reported again."""
    found = Problems()
    try:
        return _load_run(folder, suites, found, broken_suites, digest)
    finally:
        if found:
            problems.extend(ValidationError(found.items))


def _load_run(folder: Path, suites: dict[str, Suite], problems: Problems,
              broken_suites: frozenset[str], digest: Digest) -> Run | None:
    """`load_run` with its own collector: a run with any problem is never returned (even past the
    workspace's problem limit), so no unchecked manifest value reaches staging."""
    path = folder / "manifest.json"
    before = len(problems.items)
    manifest_lines: dict[str, int] = {}
    manifest = read_json_file(path, problems, manifest_lines)
    jsonl, parquet = folder / "records.jsonl", folder / "records.parquet"
    records = [p for p in (jsonl, parquet) if p.exists()]
    if len(records) != 1:
        rule = "holds both records.jsonl and records.parquet" if records else "has no records.jsonl or records.parquet"
        problems.add(f"the run folder {rule}", path=str(folder))
    if manifest is None:
        return None
    check = Checker(problems, path, None, lines=manifest_lines)
    check.unknown_keys(manifest, set(MANIFEST_REQUIRED) | set(MANIFEST_OPTIONAL))
    for key in MANIFEST_REQUIRED:
        if key not in manifest or manifest[key] is None:
            check.add("required manifest field is missing", key)
    for key in ("run_id", "suite", "suite_version", "corpus_version", "created_at", "code_revision",
                "prompt_revision", "model", "rubric_version"):
        if manifest.get(key) is not None and (not isinstance(manifest[key], str) or not manifest[key].strip()):
            check.add("expected a non-empty string", key, manifest[key])
    for key in ("retrieval", "generation"):
        if manifest.get(key) is not None and not isinstance(manifest[key], dict):
            check.add("expected an object of settings", key, manifest[key])
    if manifest.get("run_id") is not None and manifest["run_id"] != folder.name:
        check.add(f"must equal the folder name {folder.name!r}", "run_id", manifest["run_id"])
    k = manifest.get("k")
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K):
        check.add(f"the context cutoff k is a whole number from 1 to {MAX_K}", "k", k)
    if manifest.get("group") is not None and (not isinstance(manifest["group"], str) or not manifest["group"].strip()):
        check.add("expected a non-empty string", "group", manifest["group"])
    repeat = manifest.get("repeat")
    if repeat is not None and (not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1):
        check.add("a repeat number is a whole number >= 1", "repeat", repeat)
    elif repeat is not None and repeat > MAX_REPEAT:
        check.add(f"a repeat number is at most {MAX_REPEAT}", "repeat", repeat)
    if manifest.get("notes") is not None and not isinstance(manifest["notes"], str):
        check.add("expected a string", "notes", manifest["notes"])
    if manifest.get("release") is not None and (not isinstance(manifest["release"], str)
                                                or not manifest["release"].strip()):
        check.add("expected a non-empty string naming the release", "release", manifest["release"])
    suite = suites.get(manifest.get("suite")) if isinstance(manifest.get("suite"), str) else None
    if suite is None and isinstance(manifest.get("suite"), str) and manifest["suite"] in broken_suites:
        return None
    if manifest.get("suite") is not None and suite is None and isinstance(manifest.get("suite"), str):
        check.add("is not a suite of this workspace", "suite", manifest["suite"])
    if suite is not None:
        # A run may declare another corpus_version (an index built from an older corpus): it is scored
        # against these labels, and the comparison guard refuses to set it beside runs on another corpus.
        for key, expected in (("suite_version", suite.version), ("rubric_version", suite.rubric_version)):
            if manifest.get(key) is not None and manifest[key] != expected:
                check.add(f"differs from suite {suite.name!r} ({key} {expected!r}); re-run against the current "
                          "suite or keep the older suite version in its own workspace", key, manifest[key])
    chunks_path = folder / "chunks.jsonl"
    chunks = None
    if chunks_path.exists() and suite is not None and not len(problems.items) > before:
        if suite.unit == "chunk":
            problems.add(f"suite {suite.name!r} is passage-level (unit 'chunk'): its labels name its own chunks, so "
                         "a run cannot bring another chunk map; score this run in a document-level suite",
                         path=str(chunks_path))
        else:
            chunks = load_chunks(chunks_path, suite, problems, run_id=folder.name,
                                 other_corpus=manifest.get("corpus_version") != suite.corpus_version)
    if len(problems.items) > before:
        return None
    hashed = [path, records[0]] + ([chunks_path] if chunks_path.exists() else [])
    return Run(folder.name, folder, manifest, records[0], digest(hashed), chunks)


def run_files(folder: Path) -> list[Path] | None:
    """The files whose bytes make a run's content hash; None when the folder holds not exactly one
    records file (a problem `load_run` reports)."""
    records = [p for p in (folder / "records.jsonl", folder / "records.parquet") if p.exists()]
    chunks = folder / "chunks.jsonl"
    return [folder / "manifest.json", *records] + ([chunks] if chunks.exists() else []) if len(records) == 1 else None


def discover(root: Path, problems: Problems) -> tuple[list[Path], list[Path]]:
    """Suite and run folders of a workspace, sorted by name."""
    if not root.is_dir():
        problems.add("the workspace folder does not exist", path=str(root))
        return [], []
    suite_dirs = sorted(p for p in (root / "suites").iterdir() if p.is_dir()) if (root / "suites").is_dir() else []
    run_dirs = sorted(p for p in (root / "runs").iterdir() if p.is_dir()) if (root / "runs").is_dir() else []
    if not suite_dirs:
        problems.add("a workspace needs suites/<suite>/ folders", path=str(root / "suites"))
    for folder in [*suite_dirs, *run_dirs]:
        if not FOLDER_NAME.fullmatch(folder.name):
            problems.add("a suite or run folder name is 1-64 of letters, digits, '.', '_', '-'", path=str(folder))
    return suite_dirs, run_dirs


def load_workspace(root: Path, problems: Problems, *, stored: dict[str, tuple[str, str]] | None = None,
                   runs: bool = True, defer: bool = False, hashes: HashCache | None = None) -> Workspace:
    """Every suite and run manifest of a workspace, checked (the suites only, without `runs`);
    records are staged separately.

    `stored` maps suite -> (content hash, base hash) already held by a database: a suite with either
    hash equal is not parsed again (`load_suite`), unless a run brings its own chunk map (which is
    checked against the suite's documents). With `defer`, every other suite whose documents no run's
    chunk map needs is read no further than suite.json (`Suite.deferred`). `hashes`: the hashes the
    last refresh read (`scoring.store.hashes`), so that files unchanged since are not read again."""
    hashes = hashes if hashes is not None else HashCache()
    suite_dirs, run_dirs = discover(root, problems)
    if not runs:
        run_dirs = []
    stored = dict(stored or {})
    mapped: set[Any] = set()  # suites a run brings its own chunk map for
    for folder in run_dirs:
        if (folder / "chunks.jsonl").exists():
            try:
                mapped.add(json.loads((folder / "manifest.json").read_text(encoding="utf-8")).get("suite"))
            except (OSError, ValueError, AttributeError, TypeError):
                pass
    for name in mapped:
        stored.pop(name, None)
    suites: dict[str, Suite] = {}
    found: dict[str, Run] = {}
    file_sets = [paths for folder in suite_dirs for paths in (base_files(folder), review_files(folder))] + [
        run_files(folder) for folder in run_dirs]
    with hashing_ahead([paths for paths in file_sets if paths is not None], hashes) as digest:
        for folder in suite_dirs:
            known, base = stored.get(folder.name, (None, None))
            suite = load_suite(folder, problems, known_hash=known, known_base=base, digest=digest,
                               defer=defer and folder.name not in mapped)
            if suite is not None:
                suites[suite.name] = suite
        broken = frozenset(folder.name for folder in suite_dirs) - set(suites)
        for folder in run_dirs:
            run = load_run(folder, suites, problems, broken, digest=digest)
            if run is not None:
                found[run.run_id] = run
    return Workspace(root, suites, found, hashes)

