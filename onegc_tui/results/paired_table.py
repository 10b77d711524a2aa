"""The paired comparisons as rows of text (the terminal, ``onegc history --paired``, the history
screen) or as CSV and JSON, each figure labelled: SD and SEM are never left to be guessed."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from onegc_tui.results.paired import CI_LABEL, NOISE_LABEL, SD_LABEL, SEM_LABEL, PairedComparison
from onegc_tui.views.text_table import text_table

HEADER = ("task", "A", "B", "pairs", "mean A-B (+: A better)", "SD", "SEM", "95% CI (bootstrap)", "noise floor",
          "beyond noise", "verdict", "unpaired")
FIELDS = ("task", "a", "b", "n_pairs", "mean_diff", "sd", "sem", "ci_lo", "ci_hi", "noise_floor", "noise_from",
          "beyond_noise", "verdict", "unpaired", "differences")
LEGEND = (SD_LABEL, SEM_LABEL, CI_LABEL, NOISE_LABEL)


def _n(x: float | None) -> str:
    return "-" if x is None else f"{x:+.4f}" if x < 0 else f"{x:.4f}"


def cells(c: PairedComparison) -> list[str]:
    """One comparison as the table's cells."""
    ci = f"[{_n(c.ci[0])}, {_n(c.ci[1])}]" if c.ci else "-"
    noise = _n(c.noise.diff_sd) if c.noise and c.noise.diff_sd is not None else "-"
    beyond = {True: "yes", False: "no", None: "-"}[c.beyond_noise]
    return [c.task, c.a, c.b, str(c.n), _n(c.mean), _n(c.sd), _n(c.sem), ci, noise, beyond, c.verdict,
            str(len(c.unpaired))]


def as_record(c: PairedComparison) -> dict:
    return {"task": c.task, "a": c.a, "b": c.b, "n_pairs": c.n, "mean_diff": c.mean, "sd": c.sd, "sem": c.sem,
            "ci_lo": c.ci[0] if c.ci else None, "ci_hi": c.ci[1] if c.ci else None,
            "noise_floor": c.noise.diff_sd if c.noise else None, "noise_from": c.noise.source if c.noise else None,
            "beyond_noise": c.beyond_noise, "verdict": c.verdict, "unpaired": list(c.unpaired),
            "differences": list(c.differences)}


def render_paired(comps: Sequence[PairedComparison], fmt: str = "table") -> str:
    """``table`` (aligned text with its legend), ``csv`` or ``json`` (with the labels)."""
    if fmt == "json":
        return json.dumps({"schema": "onegc.paired/1", "labels": {"sd": SD_LABEL, "sem": SEM_LABEL, "ci": CI_LABEL,
                                                                  "noise_floor": NOISE_LABEL},
                           "comparisons": [as_record(c) for c in comps]}, indent=2) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(FIELDS)
        for c in comps:
            r = as_record(c)
            w.writerow(["" if r[f] is None else json.dumps(r[f]) if isinstance(r[f], list) else r[f] for f in FIELDS])
        return buf.getvalue()
    if not comps:
        return "paired comparisons: no two configurations share a task\n"
    lines = text_table(HEADER, [cells(c) for c in comps], right=frozenset(range(3, 10)))
    return "\n".join(["Paired comparisons (repeat k of A with repeat k of B)", *lines, *LEGEND]) + "\n"


__all__ = ["FIELDS", "HEADER", "LEGEND", "as_record", "cells", "render_paired"]
