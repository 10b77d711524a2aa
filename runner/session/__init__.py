"""The runner process of one session: ``python -m runner.session RUNS/<id>``.

Workspace, agent environment, budget clock, stall and disk guards, GPU sampling, and the end detail
with its cause.
"""
