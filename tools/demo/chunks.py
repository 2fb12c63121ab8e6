"""The chunked run's own chunk map: each document cut into whole sentences of at most a given size."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .model import CORPUS_VERSION

if TYPE_CHECKING:
    from .world import World


def split_sentences(text: str, limit: int) -> list[tuple[int, int]]:
    """(start, end) character spans of `text` in chunks of whole sentences, at most `limit` characters
    each (a longer sentence is a chunk of its own); `text[start:end]` is the chunk, without the
    whitespace between chunks."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S.*?(?:[.!?](?=\s|$)|(?=\n)|$)", text, re.S)]
    chunks: list[tuple[int, int]] = []
    for start, end in spans:
        if chunks and end - chunks[-1][0] <= limit:
            chunks[-1] = (chunks[-1][0], end)
        else:
            chunks.append((start, end))
    return chunks


def chunk_map(world: World, limit: int) -> dict[str, list[dict[str, object]]]:
    """Every document's chunks (document ID -> chunk rows in document order): `id` is
    ``<doc>#<n>`` (0-based), `doc_version` the document's version or the corpus version."""
    out = {}
    for doc_id in sorted(world.docs):
        doc = world.docs[doc_id]
        out[doc_id] = [
            {"id": f"{doc_id}#{n}", "doc": doc_id, "doc_version": doc.version or CORPUS_VERSION,
             "text": doc.text[start:end], "start": start, "end": end}
            for n, (start, end) in enumerate(split_sentences(doc.text, limit))
        ]
    return out
