"""Adapters: TREC files, importers of the formats teams already have, the synthetic workspace
generator, and the bundled demo."""
