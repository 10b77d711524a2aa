"""The sealed scorer and the official result.

A fresh sandboxed worker per checkpoint, the trusted judge, the checkpoint watcher and code
snapshots, and the official (validation-best) selection.
"""
