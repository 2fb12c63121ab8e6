"""Hostile text: payloads that would run, link or restyle if any page interpreted them, and a
valid workspace that carries them in every free-text field and in every identifier that allows it.

A payload that fires sets `window.__pwned` (or opens a dialog), so a browser test can tell an
inert page from an injected one; the DOM selectors in `INJECTED` find the elements a payload
would create. Identifiers may not contain whitespace (docs/formats.md), so the ID payloads are
written without spaces; run and suite IDs are folder names and carry none.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures import run_manifest, write_run_folder, write_suite_folder

PAYLOADS: dict[str, str] = {
    "script": "<script>window.__pwned=1;alert(1)</script>",
    "img": '<img src=x onerror="window.__pwned=1;alert(2)">',
    "svg": "<svg onload=window.__pwned=1></svg>",
    "iframe": '<iframe srcdoc="<script>parent.__pwned=1;alert(3)</script>"></iframe>',
    "html_link": '<a href="javascript:window.__pwned=1">html-link</a>',
    "md_link": "[click](javascript:window.__pwned=1)",
    "autolink": "<javascript:window.__pwned=1>",
    "directive": ":red[injected]",
    "bold": "**bold**",
    "html_bold": "<b>html-bold</b>",
    "latex": "$$x$$",
    "template": "{{7*7}}",
    "style": "<style>*{display:none!important}</style>",
}
"""Name -> payload. Each is shown verbatim when the text is inert."""

TEXT = " ".join(PAYLOADS.values())
"""Every payload in one text, used for every free-text field."""

QUESTION_ID = "<svg/onload=window.__pwned=1>[q1](javascript:window.__pwned=1):red[q1]"
"""The question that regresses from the baseline to the candidate (no whitespace: an ID)."""
UNANSWERABLE_ID = "q<b>2</b>"
PLAIN_ID = "plain-3"
DOC_ID = "[d1](javascript:window.__pwned=1)"
RESTRICTED_DOC_ID = "d<i>2</i>"
CHUNK_ID = "d1#<b>0</b>"
CLAIM_ID = ":red[c1]"
EXTRA_CLAIM_ID = "**c2**"
GROUP = "<b>grp</b> :red[grp] [g](javascript:window.__pwned=1)"
"""The candidate is a group of one repeat with this name (group names may hold spaces)."""
QUESTION_TYPE = "<b>type</b>:red[t]"
SUITE = "hostile"
BASELINE = "H1"
CANDIDATE_RUN = "H2"

INJECTED: dict[str, str] = {
    "img[src=x]": 'img[src="x"]',
    "on* handler": "[onerror], [onload], [onclick], [onmouseover]",
    "svg from the data": "svg[onload]",
    "iframe": 'iframe:not([data-testid="stIFrame"]), frame, object, embed',  # stIFrame: the Present page's own
    "javascript: link": 'a[href^="javascript:" i], [src^="javascript:" i]',
    "KaTeX": ".katex, math",
}
"""What a payload would leave in the DOM if it were interpreted: label -> CSS selector. (The host
pages use none of these elements: a payload-free page counts 0 for each.)"""

TAGGED = ("html-bold", "grp", "type", "tag", "hr", "eng", "0", "2", "outside")
"""The words the data wraps in <b> or <i> (in `html_bold`, the group name, the type, a tag, the
access and caller groups, the chunk, unanswerable question and restricted document IDs, a citation)."""

WORDS: tuple[str, ...] = ("injected", "bold", "html-bold", "html-link", "click", "grp", "g", "q1", "c1", "d1", "tag")
"""The words the payloads wrap in markup (`:red[injected]`, `**bold**`, `[click](javascript:...)`,
`:red[grp]`, `[q1](...)`, ...): a text node holding only such a word means the markup around it
was interpreted (a coloured span, a <strong>, a link); shown inert, the word sits inside its markup."""

_INJECTED_JS = """([selectors, words, tagged]) => {
  const out = {};
  for (const [label, selector] of Object.entries(selectors)) out[label] = document.querySelectorAll(selector).length;
  out["script from the data"] = [...document.scripts].filter(s => s.textContent.includes("__pwned")).length;
  out["style from the data"] = [...document.querySelectorAll("style")]
    .filter(s => s.textContent.includes("display:none!important")).length;
  out["<b>/<i> from the data"] = [...document.querySelectorAll("b, i")]
    .filter(e => tagged.includes(e.textContent.trim())).length;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (const word of words) out["interpreted " + word] = 0;
  while (walker.nextNode()) {
    const t = walker.currentNode.nodeValue.trim();
    if (words.includes(t)) out["interpreted " + t] += 1;
  }
  out["window.__pwned"] = typeof window.__pwned === "undefined" ? 0 : 1;
  return out;
}"""


def injected(page: Any) -> dict[str, int]:
    """Label -> count of what an interpreted payload would have left in `page` and in the documents of
    its frames (the Present page shows its slides in one); non-zero only."""
    found: dict[str, int] = {}
    for frame in getattr(page, "frames", [page]):
        for label, n in frame.evaluate(_INJECTED_JS, [INJECTED, list(WORDS), list(TAGGED)]).items():
            found[label] = found.get(label, 0) + n
    return {label: n for label, n in found.items() if n}


HOSTILE_RUN: dict[str, Any] = {
    "suite": SUITE, "corpus_version": "corpus-h", "code_revision": TEXT, "retrieval": {"method": TEXT},
    "prompt_revision": TEXT, "model": TEXT, "generation": {"note": TEXT}, "notes": TEXT,
}
"""Every free-text manifest value of both runs carries `TEXT`."""


def build_hostile_workspace(root: Path) -> Path:
    """Write the hostile workspace under `root/ws` and return it.

    Suite `hostile`: document titles and texts, a chunk text, question texts, types, tags, caller
    and access groups, expected-claim propositions and the reviewer's `disputed` note carry `TEXT`.
    Run H1 (baseline) supports `CLAIM_ID` on `QUESTION_ID`; run H2 (the only repeat of group
    `GROUP`, the candidate) cites nothing for it, adds an unsupported claim, retrieves the chunk
    and the restricted document, fails on the unanswerable question (its error is `TEXT`) and has
    no record for the plain one. Answers, contexts, claim texts, errors and manifest values carry
    `TEXT`.
    """
    ws = root / "ws"
    write_suite_folder(ws, SUITE, [
        {"id": DOC_ID, "title": TEXT, "text": TEXT},
        {"id": RESTRICTED_DOC_ID, "title": TEXT, "text": TEXT, "access": ["<b>hr</b>"]},
        {"id": "d3", "title": "Plain", "text": "plain"},
    ], [
        {"id": QUESTION_ID, "text": TEXT, "type": QUESTION_TYPE, "split": "dev", "critical": True,
         "tags": [":red[tag]", "<b>tag</b>", TEXT], "caller": ["<i>eng</i>"], "relevant": [DOC_ID],
         "support": {CLAIM_ID: [DOC_ID]}, "claims": {CLAIM_ID: TEXT}, "disputed": TEXT},
        {"id": UNANSWERABLE_ID, "text": "Unanswerable " + TEXT, "type": "unanswerable", "split": "dev",
         "tags": [TEXT], "relevant": [], "support": {}},
        {"id": PLAIN_ID, "text": "Plain question", "type": "lookup", "split": "heldout", "relevant": ["d3"],
         "support": {"k": ["d3"]}},
    ], corpus_version="corpus-h", description=TEXT,
        chunks=[{"id": CHUNK_ID, "doc": DOC_ID, "doc_version": "corpus-h", "text": TEXT}])
    write_run_folder(ws, run_manifest(BASELINE, **HOSTILE_RUN), [
        {"question_id": QUESTION_ID, "retrieved": [DOC_ID, "d3"], "context": TEXT, "answer": TEXT,
         "claims": [{"id": CLAIM_ID, "citations": [DOC_ID], "text": TEXT}], "latency_ms": 100, "cost_usd": 0.001,
         "error": None},
        {"question_id": UNANSWERABLE_ID, "retrieved": [], "context": TEXT, "answer": TEXT, "claims": [],
         "latency_ms": 100, "cost_usd": 0.001, "error": None},
        {"question_id": PLAIN_ID, "retrieved": ["d3"], "answer": "plain", "claims": [{"id": "k", "citations": ["d3"]}],
         "latency_ms": 100, "cost_usd": 0.001, "error": None},
    ])
    write_run_folder(ws, run_manifest(CANDIDATE_RUN, **HOSTILE_RUN, created_at="2026-11-02T00:00:00Z", group=GROUP,
                                      repeat=1), [
        {"question_id": QUESTION_ID, "retrieved": [CHUNK_ID, RESTRICTED_DOC_ID], "context": TEXT, "answer": TEXT,
         "claims": [{"id": CLAIM_ID, "citations": [], "text": TEXT},
                    {"id": EXTRA_CLAIM_ID, "citations": ["<b>outside</b>"], "text": TEXT}],
         "latency_ms": 100, "cost_usd": 0.001, "error": None},
        {"question_id": UNANSWERABLE_ID, "retrieved": [], "answer": None, "claims": [], "latency_ms": 100,
         "cost_usd": 0.001, "error": TEXT},
    ])
    return ws


POLICY = f'''name = "{PAYLOADS['script']}"

[[gates]]
name = "{PAYLOADS['img'].replace('"', "'")} critical coverage"
metric = "coverage"
slice = "critical"
min = 0.9

[[gates]]
name = "{PAYLOADS['md_link']} no support regression"
metric = "support"
slice = "answerable"
max_regressions = 0
'''
"""An acceptance policy whose name and gate names are payloads; both gates fail on this workspace."""
