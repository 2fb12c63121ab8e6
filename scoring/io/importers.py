"""`ragslice import`: other tools' files -> a workspace (docs/formats.md).

One module per format, sharing `scoring.io.importing` (refusals and ``--skip-bad``, the temporary
folder moved into place on success, manifests with ``k`` and provenance, document IDs). Each
declares its format as an `Importer` named ``IMPORTER`` (source name, arguments, the function that
runs it and prints its summary); `FORMATS` lists the modules, and the command line builds one
``ragslice import <source>`` per declaration, in this order:

- `scoring.io.trec_import`: TREC qrels and run files;
- `scoring.io.ragas`: Ragas single-turn samples;
- `scoring.io.beir`: BEIR folders;
- `scoring.io.eval_dataset`: evaluation datasets of queries and relevant documents;
- `scoring.io.trec_rag`: TREC RAG 2024 and 2025 runs (and `export --format trec-rag`);
- `scoring.io.openinference`: OpenInference spans, added as a run to an existing workspace;
- `scoring.io.ragchecker`: RAGChecker inputs.

A new format is one module declaring its `Importer`, its line in `FORMATS`, and its section of
docs/formats.md.
"""
from __future__ import annotations

from importlib import import_module

from .importing import IMPORT_K, Importer, ImportResult, Refusals, context_id, normalise_context
from .ragas import RAGAS_FIELDS, RAGAS_SUITE, import_ragas
from .trec_import import TREC_SUITE, import_trec, load_chunk_map

FORMATS = ("trec_import", "ragas", "beir", "eval_dataset", "trec_rag", "openinference", "ragchecker")
"""The importer modules of `scoring.io`, in the order `ragslice import --help` lists their formats."""


def importers() -> list[Importer]:
    """Every format's declaration, in `FORMATS` order (the modules are imported on this call)."""
    return [import_module(f"{__package__}.{name}").IMPORTER for name in FORMATS]


__all__ = ["FORMATS", "IMPORT_K", "ImportResult", "Importer", "RAGAS_FIELDS", "RAGAS_SUITE", "Refusals", "TREC_SUITE",
           "context_id", "import_ragas", "import_trec", "importers", "load_chunk_map", "normalise_context"]
