"""The runner process of one session: ``python -m runner.session RUNS/<id>``.

Workspace, agent environment, the agent's start, output and stop, budget clock, stall and disk
guards, GPU sampling, the contract, and the end detail with its cause.
"""
