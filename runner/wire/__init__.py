"""The files between processes, which both sides import and which import no other wing.

Events and their summary, end reasons, session paths, defaults and config, JSON-lines reading and
writing, control requests, verdicts, liveness: the role of inspect_ai's ``log/``.
"""
