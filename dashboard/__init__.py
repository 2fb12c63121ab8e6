"""ragslice dashboard: Streamlit pages that only query the DuckDB file written by `ragslice refresh`."""
