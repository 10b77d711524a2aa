"""Everything that runs one session: config, events, workspace, agents, budget, processes, GPU, checkpoints."""

HARNESS_VERSION = "0.1.0"
