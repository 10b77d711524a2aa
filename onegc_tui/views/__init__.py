"""What the screens show, computed without a screen: the monitor's records, the wording of events,
the countdown, the timeline, a session's anytime curve and time ledger. No textual, no rich; nothing here
knows of results/ (analysis across sessions), app/ or cli/ (import-linter: pyproject.toml)."""
