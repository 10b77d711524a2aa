"""The monitor's widgets, named by role: the sessions table, the budget, GPU and checkpoint panes,
the transcript, plots and sparklines, the header and the key footer."""
