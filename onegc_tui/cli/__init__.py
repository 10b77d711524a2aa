"""The ``onegc`` command line (click).

The commands, their shared helpers, ``doctor``, ``history``, ``study`` and the plain line-oriented
display of ``onegc run --plain``.
"""
