"""`ragslice export`: a database's tables as files other tools read."""
from __future__ import annotations

from pathlib import Path

from ..store.database import Database
from ..store.schema import TABLES

EXPORT_TABLES = ("question_scores", "claims", "retrieved", "records", "questions", "runs")
"""The per-question tables `export_tables` writes, one file each."""


def export_tables(db: Path, out: Path, *, fmt: str = "csv") -> list[Path]:
    """Write the per-question tables as one CSV or Parquet file each into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with Database(db).connect() as con:
        for table in EXPORT_TABLES:
            if table not in TABLES:
                continue
            target = out / f"{table}.{fmt}"
            options = "(FORMAT parquet)" if fmt == "parquet" else "(FORMAT csv, HEADER true)"
            con.execute(f"COPY (SELECT * FROM {table}) TO '{_sql_path(target)}' {options}")
            written.append(target)
    return written


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")
