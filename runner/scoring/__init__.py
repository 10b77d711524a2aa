"""The sealed scorer and the official result.

A fresh sandboxed worker per checkpoint, the trusted judge, the checkpoint watcher and code
snapshots; the live scoring of a session (live.py: what was found and how it scored), its
official phase after the agent stops (official_phase.py: the validation-best selection, the
unofficial test-best, the verdict) and its result.json (result_file.py). The checks that judge a
checkpoint beyond its metric live in the integrity wing (runner/integrity/).
"""
