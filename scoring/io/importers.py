"""`ragslice import`: other tools' files -> a workspace (docs/formats.md).

One module per format, sharing `scoring.io.importing` (refusals and ``--skip-bad``, the temporary
folder moved into place on success, manifests with ``k`` and provenance, document IDs):

- `scoring.io.trec_import`: TREC qrels and run files;
- `scoring.io.ragas`: Ragas single-turn samples;
- `scoring.io.beir`: BEIR folders;
- `scoring.io.eval_dataset`: evaluation datasets of queries and relevant documents;
- `scoring.io.trec_rag`: TREC RAG 2024 and 2025 runs (and `export --format trec-rag`);
- `scoring.io.openinference`: OpenInference spans, added as a run to an existing workspace;
- `scoring.io.ragchecker`: RAGChecker inputs.
"""
from __future__ import annotations

from .importing import IMPORT_K, ImportResult, Refusals, context_id, normalise_context
from .ragas import RAGAS_FIELDS, RAGAS_SUITE, import_ragas
from .trec_import import TREC_SUITE, import_trec, load_chunk_map

__all__ = ["IMPORT_K", "ImportResult", "RAGAS_FIELDS", "RAGAS_SUITE", "Refusals", "TREC_SUITE", "context_id",
           "import_ragas", "import_trec", "load_chunk_map", "normalise_context"]
