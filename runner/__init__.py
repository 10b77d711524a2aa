"""Everything that runs sessions, in wings: ``wire`` (the files between processes), ``sandbox``,
``scoring``, ``agents``, ``session`` (one runner process) and ``launch`` (starting them); the loose
leaves ``errors``, ``settings`` and ``duration``."""

HARNESS_VERSION = "0.1.0"
