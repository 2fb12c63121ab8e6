"""The reference implementation: the scoring contract in plain Python, readable aloud.

`evaluate` keeps the grounded-test-set seed's input shapes and validation rules; `score_question`
is the kernel it shares with the workspace reference used to cross-check the SQL engine.
Definitions (denominators, n/a rules) are declared in `scoring.metrics`.
"""
from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import invalid
from .alignment import LEXICAL_SUPPORT_THRESHOLD, LEXICAL_THRESHOLD, MIN_CONTENT_TOKENS, STOPWORDS, UNLABELLED_ID
from .registry import JUDGED_ONLY_KEYS, PARTIAL_WEIGHT, RANKING_KEYS, REGISTRY, SEED_KEYS, SUPPORT_GRADES

MAX_CLAIMS = 100
"""The most claims a record may make (docs/formats.md); a suite may declare fewer (`max_claims`)."""

SEED_ID = re.compile(r"[a-z][a-z0-9-]{0,31}")
MAX_IDS = 100
Status = Literal["ok", "missing", "failed"]
REASONS = (
    "no_citation",
    "unlabelled_claim",
    "citation_not_supporting",
    "citation_partial",
    "citation_not_visible",
    "citation_unknown",
    "citation_restricted",
)
PARTIAL_REASON = "citation_partial"
"""A citation labelled as only partly supporting the claim: the claim is not supported, and counts
`PARTIAL_WEIGHT` in the graded metrics when this is its only reason."""


def claim_weight(reasons: Collection[str]) -> float:
    """What a claim counts in the graded metrics: 1 when supported, `PARTIAL_WEIGHT` when its only reason
    is a partial citation, else 0."""
    return 1.0 if not reasons else PARTIAL_WEIGHT if set(reasons) == {PARTIAL_REASON} else 0.0


@dataclass(frozen=True)
class Labels:
    """One question's reviewed labels: document grades, expected claims (`support`: claim -> documents
    that fully support it), the caller's groups, and the documents that only partly support a claim."""

    grades: Mapping[str, int]
    support: Mapping[str, frozenset[str]]
    caller: frozenset[str] | None = None
    answers_asked: bool = True
    """Whether the question's suite asks for answers at all: it has expected claims somewhere."""
    partial: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """claim -> documents labelled as partly supporting it; every such claim is a key of `support` too
    (with no document when none fully supports it)."""
    assessed: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Assessed claims (a run's claims whose support was judged; not expected): claim -> documents that
    fully support it. Support judges them like expected claims; Coverage does not count them."""
    assessed_partial: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Assessed claims -> documents that partly support them."""

    def relevant(self, level: int = 1) -> set[str]:
        return {doc for doc, grade in self.grades.items() if grade >= level}

    @property
    def answerable(self) -> bool:
        """Answerable means at least one positively graded document."""
        return any(grade > 0 for grade in self.grades.values())

    @property
    def asks_answer(self) -> bool:
        """Labelled claims (expected or assessed), or unanswerable in a suite that asks for answers
        (`metrics.ASKS_ANSWER`)."""
        return bool(self.support) or bool(self.assessed) or (not self.answerable and self.answers_asked)

    def supporting(self, claim: str) -> tuple[frozenset[str], frozenset[str]] | None:
        """(documents fully, documents partly supporting) a labelled claim, expected or assessed; None
        for a claim no label names."""
        if claim in self.support:
            return self.support[claim], self.partial.get(claim, frozenset())
        if claim in self.assessed:
            return self.assessed[claim], self.assessed_partial.get(claim, frozenset())
        return None


def graded_support(support: Mapping[str, Any]) -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """A `support` field's (claim -> full documents, claim -> partial documents): a list of documents is
    "full" for each; a map document -> grade (`SUPPORT_GRADES`) grades each, "none" as if unlisted. Every
    claim is a key of the first; only claims with a partial document are keys of the second."""
    full, partial = {}, {}
    for claim, docs in support.items():
        if isinstance(docs, Mapping):
            full[claim] = frozenset(d for d, grade in docs.items() if grade == "full")
            part = frozenset(d for d, grade in docs.items() if grade == "partial")
            if part:
                partial[claim] = part
        else:
            full[claim] = frozenset(docs)
    return full, partial


def suite_labels(questions: Iterable[Mapping[str, Any]]) -> dict[str, Labels]:
    """Each question's labels, by ID, from a suite's `questions.jsonl` rows (docs/formats.md): a
    list of relevant IDs is grade 1 each; `answers_asked` is whether any question of the suite has
    expected claims."""
    rows = list(questions)
    asked = any(q.get("support") or q.get("assessed") for q in rows)
    out = {}
    for q in rows:
        rel = q.get("relevant") or {}
        grades = dict(rel) if isinstance(rel, Mapping) else {d: 1 for d in rel}
        caller = q.get("caller")
        full, partial = graded_support(q.get("support") or {})
        assessed, assessed_partial = graded_support(q.get("assessed") or {})
        out[q["id"]] = Labels(grades, full, None if caller is None else frozenset(caller), asked, partial, assessed,
                              assessed_partial)
    return out


@dataclass(frozen=True)
class Output:
    """What one run returned for one question: the ranking and the (claim, citations) pairs.

    A None in `retrieved` is a slot that holds no new document (see `map_chunks`)."""

    retrieved: tuple[str | None, ...] = ()
    claims: tuple[tuple[str, tuple[str, ...]], ...] = ()


def map_chunks(output: Output, chunk_docs: Mapping[str, str]) -> Output:
    """The document-level output that a chunk-level output stands for (`chunk_docs`: chunk -> document).

    A retrieved chunk stands for its document, which counts once, at the rank of its first chunk:
    a later chunk of the same document leaves its slot empty (None), so ranks stay slots and P@k
    keeps k as its denominator. A cited chunk stands for its document, and a claim is judged on the
    set of documents it cites (first citation order). IDs that are not chunks are kept as they are
    (documents, or unknown citations). A passage-level suite matches chunks exactly: no mapping.
    """
    seen: set[str] = set()
    ranking: list[str | None] = []
    for item in output.retrieved:
        doc = chunk_docs.get(item, item) if item is not None else None
        ranking.append(None if doc is None or doc in seen else doc)
        if doc is not None:
            seen.add(doc)
    claims = tuple(
        (claim, tuple(dict.fromkeys(chunk_docs.get(c, c) for c in citations))) for claim, citations in output.claims
    )
    return Output(tuple(ranking), claims)


@dataclass(frozen=True)
class ClaimVerdict:
    """A generated claim, whether it is supported, and every reason it is not."""

    claim: str
    citations: tuple[str, ...]
    reasons: tuple[str, ...] = field(default=())

    @property
    def supported(self) -> bool:
        return not self.reasons

    @property
    def weight(self) -> float:
        """What the claim counts in the graded metrics (`claim_weight`)."""
        return claim_weight(self.reasons)


def restricted_docs(docs: Iterable[str], caller: frozenset[str] | None, access: Mapping[str, Collection[str]]) -> set[str]:
    """Documents the caller may not see: those with access groups, none of them the caller's.

    A question with no caller, or a document with no access groups, restricts nothing.
    """
    if caller is None:
        return set()
    return {d for d in docs if access.get(d) and not (set(access[d]) & caller)}


def judge_claims(
    labels: Labels, output: Output, *, k: int, known: Collection[str], restricted: Collection[str]
) -> list[ClaimVerdict]:
    """Verdict per generated claim. Supported only with >= 1 citation and every citation labelled
    for that claim (fully), inside the first k, known and not restricted. A citation labelled as only
    partly supporting the claim is the reason `citation_partial`."""
    visible = set(output.retrieved[:k])
    verdicts = []
    for claim, citations in output.claims:
        labelled, partial = labels.supporting(claim) or (frozenset(), frozenset())
        reasons = {
            "no_citation": not citations,
            "unlabelled_claim": labels.supporting(claim) is None,
            "citation_not_supporting": any(d in known and d not in labelled and d not in partial for d in citations),
            "citation_partial": any(d in partial for d in citations),
            "citation_not_visible": any((d in labelled or d in partial) and d not in visible for d in citations),
            "citation_unknown": any(d not in known for d in citations),
            "citation_restricted": any(d in restricted for d in citations),
        }
        verdicts.append(ClaimVerdict(claim, tuple(citations), tuple(r for r in REASONS if reasons[r])))
    return verdicts


def _dcg(gains: Iterable[int]) -> float:
    return sum(max(g, 0) / math.log2(rank + 1) for rank, g in enumerate(gains, 1))


def _bpref(labels: Labels, top: Iterable[str | None], relevant: set[str]) -> float:
    """trec_eval's bpref over `top`: 1/R x the sum, over each relevant document in it, of
    1 - min(n, R) / min(R, N), n the judged non-relevant documents ranked above it (1 when n is 0);
    R relevant, N judged non-relevant documents of the question; unjudged documents passed over."""
    n_relevant, n_nonrelevant = len(relevant), len(labels.grades) - len(relevant)
    above, total = 0, 0.0
    for doc in top:
        if doc in relevant:
            total += 1 - min(above, n_relevant) / min(n_relevant, n_nonrelevant) if above else 1.0
        elif doc in labels.grades:
            above += 1
    return total / n_relevant


def retrieval_scores(labels: Labels, ranking: tuple[str | None, ...], *, cutoff: int | None, level: int
                     ) -> dict[str, Any]:
    """P, R, RR, nDCG, AP, F1, Success at `cutoff` (None: the whole ranking), and over the judged
    documents only P', nDCG', AP' (the condensed list: the ranking without its unjudged documents, then
    cut) and Bpref; each None when no document reaches `level`. And Judged: the share of the documents
    retrieved within the cutoff that carry a label (any grade), None when nothing was retrieved."""
    top = ranking if cutoff is None else ranking[:cutoff]
    documents = [doc for doc in top if doc is not None]  # an empty slot is a later chunk of a counted document
    judged = {"n_retrieved": len(documents), "n_judged": sum(1 for doc in documents if doc in labels.grades)}
    judged["judged"] = judged["n_judged"] / judged["n_retrieved"] if documents else None
    relevant = labels.relevant(level)
    if not relevant:
        return {key: None for key in (*RANKING_KEYS, *JUDGED_ONLY_KEYS)} | {"n_hits": 0, "n_relevant": 0} | judged
    hit_ranks = [rank for rank, doc in enumerate(top, 1) if doc in relevant]
    hits = len(hit_ranks)
    precision = hits / cutoff if cutoff is not None else (hits / len(top) if top else 0.0)
    recall = hits / len(relevant)
    ideal = sorted(labels.grades.values(), reverse=True)
    idcg = _dcg(ideal if cutoff is None else ideal[:cutoff])
    condensed = [doc for doc in ranking if doc is not None and doc in labels.grades]
    condensed_top = condensed if cutoff is None else condensed[:cutoff]
    condensed_ranks = [rank for rank, doc in enumerate(condensed_top, 1) if doc in relevant]
    return {
        "precision": precision,
        "recall": recall,
        "rr": 1 / hit_ranks[0] if hit_ranks else 0.0,
        "ndcg": _dcg(labels.grades.get(doc, 0) for doc in top) / idcg if idcg > 0 else 0.0,
        "ap": sum((i + 1) / rank for i, rank in enumerate(hit_ranks)) / len(relevant),
        "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "success": 1.0 if hits else 0.0,
        "precision_condensed": len(condensed_ranks) / cutoff if cutoff is not None
        else (len(condensed_ranks) / len(condensed_top) if condensed_top else 0.0),
        "ndcg_condensed": _dcg(labels.grades[doc] for doc in condensed_top) / idcg if idcg > 0 else 0.0,
        "ap_condensed": sum((i + 1) / rank for i, rank in enumerate(condensed_ranks)) / len(relevant),
        "bpref": _bpref(labels, top, relevant),
        "n_hits": hits,
        "n_relevant": len(relevant),
    } | judged


def score_question(
    labels: Labels,
    output: Output | None,
    *,
    k: int,
    level: int = 1,
    known: Collection[str],
    access: Mapping[str, Collection[str]] | None = None,
    status: Status = "ok",
    max_claims: int = MAX_CLAIMS,
) -> dict[str, Any]:
    """Every registry metric for one question and one run's output at context cutoff `k`.

    A `missing` or `failed` record is scored as an empty output that also fails every answer
    metric (retrieval 0 and coverage 0 on answerable questions, support 0, no abstention, a false
    abstention on an answerable question); pooled, it counts as `max_claims` unsupported generated
    claims (`n_claims`). A failed record's own ranking and citations still count as disclosures.
    Answer metrics are None on a question that asks for no answer (`Labels.asks_answer`).
    """
    output = output if output is not None and status != "missing" else Output()
    access = access or {}
    shown = set(output.retrieved[:k]) | {d for _, cites in output.claims for d in cites}
    restricted = restricted_docs(shown, labels.caller, access)
    usable = output if status == "ok" else Output()
    verdicts = judge_claims(labels, usable, k=k, known=known, restricted=restricted)
    supported = {v.claim for v in verdicts if v.supported}
    weights = {v.claim: v.weight for v in verdicts}
    n_claims = len(verdicts)
    n_expected = len(labels.support)
    n_expected_supported = len(supported & set(labels.support))
    graded = sum(weights.values())
    expected_graded = sum(w for claim, w in weights.items() if claim in labels.support)
    scores = retrieval_scores(labels, usable.retrieved, cutoff=k, level=level)
    failed = status != "ok"
    asks = labels.asks_answer
    answered = not failed and n_claims > 0
    scores.update(
        support=None if not asks else 0.0 if failed else (len(supported) / n_claims if n_claims else None),
        coverage=n_expected_supported / n_expected if n_expected else None,
        support_graded=None if not asks else 0.0 if failed else (graded / n_claims if n_claims else None),
        coverage_graded=expected_graded / n_expected if n_expected else None,
        abstention_correct=(not failed and n_claims == 0) if asks and not labels.answerable else None,
        false_abstention=(not answered) if asks and labels.answerable else None,
        disclosures=len(restricted),
        n_claims=max_claims if failed and asks else n_claims,
        n_supported=len(supported),
        n_expected=n_expected,
        n_expected_supported=n_expected_supported,
        n_supported_graded=graded,
        n_expected_supported_graded=expected_graded,
        k=k,
    )
    return scores


# --- free-text answers: sentences aligned to claims (`scoring.metrics.alignment`) ------------------

_SPACE = re.compile(r"[ \t\n\r\f\v]+")


def normalise_sentence(text: str) -> str:
    """NFC, each run of spaces, tabs and line breaks one space, trimmed; case kept."""
    return _SPACE.sub(" ", unicodedata.normalize("NFC", text)).strip(" ")


def content_tokens(text: str) -> frozenset[str]:
    """Lower-cased maximal runs of letters and digits (Unicode categories L, N), stopwords dropped."""
    tokens, current = set(), []
    for ch in "".join(c.lower()[0] for c in text) + " ":  # simple case mapping: U+0130 becomes "i", as in SQL
        if unicodedata.category(ch)[0] in "LN":
            current.append(ch)
        elif current:
            tokens.add("".join(current))
            current = []
    return frozenset(tokens - STOPWORDS)


@dataclass(frozen=True)
class Alignment:
    """One sentence's alignment: `claims` (to `claim_ids`), `unlabelled` or `no_claim`."""

    outcome: str
    claim_ids: tuple[str, ...] = ()
    confidence: float | None = None


def lexical_alignment(sentence: str, citations: Sequence[str], propositions: Mapping[str, str | None],
                      threshold: float = LEXICAL_THRESHOLD) -> Alignment:
    """The built-in aligner (`alignment.LEXICAL_RULES`): every claim whose proposition's tokens are at
    least `threshold` in the sentence; else `no_claim` (no citation, few tokens) or `unlabelled`."""
    words = content_tokens(sentence)
    overlaps = {}
    for claim, proposition in propositions.items():
        wanted = content_tokens(proposition or "")
        overlaps[claim] = len(words & wanted) / len(wanted) if wanted else 0.0
    best = max(overlaps.values(), default=0.0)
    matched = tuple(sorted(c for c, o in overlaps.items() if o >= threshold))
    if matched:
        return Alignment("claims", matched, best)
    if not citations and len(words) < MIN_CONTENT_TOKENS:
        return Alignment("no_claim", (), 1 - best)
    return Alignment("unlabelled", (), 1 - best)


def lexical_support(sentence: str, cited: Sequence[str | None],
                    threshold: float = LEXICAL_SUPPORT_THRESHOLD) -> tuple[str, ...]:
    """The lexical aligner's grade of each citation (`alignment.LEXICAL_SUPPORT_RULES`; `cited`: each cited
    document's title and text joined by a space, None when it is not in the suite): `partial` when at
    least `threshold` of the sentence's tokens are in the document, else `none`; never `full`."""
    words = content_tokens(sentence)
    grades = []
    for text in cited:
        shared = len(words & content_tokens(text)) if text is not None else 0
        grades.append("partial" if words and shared >= threshold * len(words) else "none")
    return tuple(grades)


def resolve_citations(citations: Sequence[str | int], retrieved: Sequence[str]) -> tuple[str, ...]:
    """A sentence's citations as IDs: an integer is a 0-based index into `retrieved`."""
    return tuple(retrieved[c] if isinstance(c, int) else c for c in citations)


def sentence_claims(sentences: Sequence[Sequence[str]], alignments: Sequence[Alignment]
                    ) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The generated claims of aligned sentences (`sentences`: each sentence's resolved citations), by
    `alignment.CLAIM_RULES`: one claim per aligned claim ID with the union of its sentences' citations
    (in sentence order), one per `unlabelled` sentence, none for `no_claim`; claims in the order of
    their first sentence, claim IDs sorted within a sentence."""
    cited: dict[str, list[str]] = {}
    for number, (citations, alignment) in enumerate(zip(sentences, alignments)):
        if alignment.outcome == "no_claim":
            continue
        ids = alignment.claim_ids if alignment.outcome == "claims" else (UNLABELLED_ID.format(sentence=number),)
        for claim in sorted(ids):
            union = cited.setdefault(claim, [])
            union += [c for c in citations if c not in union]
    return tuple((claim, tuple(docs)) for claim, docs in cited.items())


# --- the seed's entry point -------------------------------------------------------------------


def _ids(value: Any, field_name: str, *, allow_list: bool = True) -> tuple[str, ...]:
    """A seed ID list: a tuple (or list) of at most 100 unique IDs matching [a-z][a-z0-9-]{0,31}."""
    kinds = (tuple, list) if allow_list else (tuple,)
    if type(value) not in kinds:
        raise invalid("expected a tuple of IDs", field_name, value)
    if len(value) > MAX_IDS:
        raise invalid(f"at most {MAX_IDS} IDs are allowed, found {len(value)}", field_name, value)
    for item in value:
        if type(item) is not str or not SEED_ID.fullmatch(item):
            raise invalid("an ID is lowercase, starts with a letter, at most 32 of [a-z0-9-]", field_name, item)
    seen: set[str] = set()
    for item in value:
        if item in seen:
            raise invalid("duplicate ID", field_name, item)
        seen.add(item)
    return tuple(value)


def validate_corpus(corpus: Any) -> None:
    """Check a whole corpus once: a non-empty dict of seed IDs to non-blank text (no size bound)."""
    if type(corpus) is not dict or not corpus:
        raise invalid("expected a non-empty dict of document ID -> text", "corpus", type(corpus).__name__)
    for doc, text in corpus.items():
        if type(doc) is not str or not SEED_ID.fullmatch(doc):
            raise invalid("a document ID is lowercase, starts with a letter, at most 32 of [a-z0-9-]", "corpus", doc)
        if type(text) is not str or not text.strip():
            raise invalid("document text must be non-empty", f"corpus[{doc!r}]", text)


def _check_documents(corpus: Mapping[str, Any], docs: Iterable[str], field_name: str) -> None:
    for doc in docs:
        if doc not in corpus:
            raise invalid("not a document of the corpus", field_name, doc)
        text = corpus[doc]
        if type(text) is not str or not text.strip():
            raise invalid("document text must be non-empty", f"corpus[{doc!r}]", text)


def validate(corpus: Any, case: Any, run: Any, k: Any, level: Any = 1) -> tuple[Labels, Output]:
    """The seed's validation rules, each raising ValidationError naming field, value and rule.

    The corpus is checked only as far as this case and run use it (see `validate_corpus`).
    """
    if type(k) is not int or not 1 <= k <= MAX_IDS:
        raise invalid("the cutoff is a whole number from 1 to 100", "k", k)
    if type(level) is not int or level < 1:
        raise invalid("the relevance level is a whole number >= 1", "level", level)
    if type(corpus) is not dict or not corpus:
        raise invalid("expected a non-empty dict of document ID -> text", "corpus", type(corpus).__name__)
    if type(case) is not dict:
        raise invalid("expected a dict", "case", type(case).__name__)
    if type(run) is not dict:
        raise invalid("expected a dict", "run", type(run).__name__)

    raw = case.get("relevant")
    if type(raw) is dict:
        _ids(tuple(raw), "relevant")
        for doc, grade in raw.items():
            if type(grade) is not int:
                raise invalid("a relevance grade is a whole number", f"relevant[{doc!r}]", grade)
        grades = dict(raw)
    else:
        grades = {doc: 1 for doc in _ids(raw, "relevant")}
    _check_documents(corpus, grades, "relevant")
    positive = {doc for doc, grade in grades.items() if grade > 0}

    support = case.get("support")
    if type(support) is not dict:
        raise invalid("expected a dict of claim ID -> supporting document IDs", "support", support)
    _ids(tuple(support), "support")
    if bool(positive) != bool(support):
        rule = (
            "a question with relevant documents needs expected claims"
            if positive
            else "expected claims need relevant documents"
        )
        raise invalid(rule, "support", support)
    labelled: dict[str, frozenset[str]] = {}
    partial: dict[str, frozenset[str]] = {}
    for claim, sources in support.items():
        if type(sources) is dict:
            _ids(tuple(sources), f"support[{claim!r}]")
            for doc, grade in sources.items():
                if grade not in SUPPORT_GRADES:
                    raise invalid('a support grade is "full", "partial" or "none"', f"support[{claim!r}][{doc!r}]",
                                  grade)
            docs = {doc for doc, grade in sources.items() if grade != "none"}
            _check_documents(corpus, sources, f"support[{claim!r}]")
        else:
            docs = set(_ids(sources, f"support[{claim!r}]"))
        if not docs:
            raise invalid("an expected claim needs at least one supporting document (full or partial)",
                          f"support[{claim!r}]", sources)
        if not docs <= positive:
            raise invalid(
                "supporting documents must be labelled relevant", f"support[{claim!r}]", sorted(docs - positive)
            )
        full, part = graded_support({claim: sources})
        labelled[claim] = full[claim]
        if part:
            partial[claim] = part[claim]

    caller = case.get("caller")
    if caller is not None:
        if type(caller) not in (tuple, list) or any(type(g) is not str or not g for g in caller):
            raise invalid("expected a tuple of group names", "caller", caller)
        caller = frozenset(caller)

    retrieved = _ids(run.get("retrieved"), "retrieved")
    _check_documents(corpus, retrieved, "retrieved")
    claims = run.get("claims")
    if type(claims) not in (tuple, list) or len(claims) > MAX_IDS:
        raise invalid(f"expected a tuple of at most {MAX_IDS} (claim, citations) pairs", "claims", claims)
    pairs = []
    for pair in claims:
        if type(pair) not in (tuple, list) or len(pair) != 2:
            raise invalid("expected a (claim ID, citations) pair", "claims", pair)
        pairs.append((pair[0], _ids(pair[1], f"citations of {pair[0]!r}")))
    _ids(tuple(claim for claim, _ in pairs), "claims")
    return Labels(grades, labelled, caller, partial=partial), Output(retrieved, tuple(pairs))


def evaluate(
    corpus: dict[str, str],
    case: dict[str, Any],
    run: dict[str, Any],
    *,
    k: int = 2,
    level: int = 1,
    access: Mapping[str, Collection[str]] | None = None,
) -> dict[str, Any]:
    """Score one recorded run of one case at context cutoff `k` (the seed's contract).

    Returns the seed's six keys first (`precision`, `recall`, `rr`, `support`, `coverage`,
    `abstention_correct`), then every other registry metric; n/a is None, never 0. `access`
    maps document ID -> groups allowed to see it; `case["caller"]` names the caller's groups.
    """
    labels, output = validate(corpus, case, run, k, level)
    scores = score_question(labels, output, k=k, level=level, known=corpus, access=access)
    return {key: scores[key] for key in (*SEED_KEYS, *(m.key for m in REGISTRY if m.key not in SEED_KEYS))}


def claim_verdicts(
    corpus: dict[str, str],
    case: dict[str, Any],
    run: dict[str, Any],
    *,
    k: int = 2,
    access: Mapping[str, Collection[str]] | None = None,
) -> list[ClaimVerdict]:
    """Each generated claim's verdict and reasons, with the same validation as `evaluate`."""
    labels, output = validate(corpus, case, run, k)
    shown = set(output.retrieved[:k]) | {d for _, cites in output.claims for d in cites}
    restricted = restricted_docs(shown, labels.caller, access or {})
    return judge_claims(labels, output, k=k, known=corpus, restricted=restricted)
