"""Analysis across sessions, statistics, exports and the report: the agent × task matrix, paired
comparisons, cost, usage, study data, CSV/JSON/SQLite/eval exports and the HTML report. Reads
views/ and store/; no textual, no rich, never app/ or cli/ (import-linter: pyproject.toml)."""
