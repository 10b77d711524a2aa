"""Starting sessions and finding their runners again.

The one start request and start path (``onegc run``, ``demo``, the monitor's form, ``baseline``,
``study``), spawning, launcher records, abort, the local GPU queue, Slurm, reconciliation and
studies.
"""
