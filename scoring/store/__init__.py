"""Workspace files in, the DuckDB file out: reading and checking suites and runs (with the file and
line of every problem), staging, scoring with the SQL engine, the schema, the summary tables, and the
one door through which anything opens the database."""
