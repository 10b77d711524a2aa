"""The integrity checks, in one registry: what each decides, the threat rows it answers, its measured
power and false-alarm rate, and which checks each task runs (../shared/INTEGRITY.md, rows V1-V10).

A check says what it found as a typed :class:`runner.wire.verdicts.Verdict` made by :func:`verdict`,
which fills in the check's measured figures by name. :func:`coverage` says, for a task and how a
session of it was run, how each threat row is met: by a *check* (named), by *construction* (the
attack is impossible as the session is laid out), *not applicable* (nothing of the task can be
attacked that way), or **not checked**, which every view shows beside the number.

The power figures are those measured by ``benchmarks/canary_power.py`` and
``benchmarks/causal_power.py`` (docs/benchmarks.md, which gives the run, the models and n); a figure
is the share of planted violations of that name the check caught at its disqualifying level.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from runner.wire.answer_check import text
from runner.wire.verdicts import EVIDENCE_CHARS, Strength, Verdict

THREATS = ("V1", "V2", "V3", "V4", "V5", "V6", "V7", "V8", "V9", "V10")  # the rows a task's checks answer
How = Literal["check", "construction", "not applicable", "not checked"]


@dataclass(frozen=True)
class Check:
    """One check: its name, the threat rows it answers, one line for a person, and what it was
    measured to catch (``power``: task -> attack -> share caught; ``"*"`` any task) and to flag
    wrongly (``false_alarm``: task -> share of honest checkpoints flagged)."""

    name: str
    threats: tuple[str, ...]
    what: str
    power: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    false_alarm: Mapping[str, float] = field(default_factory=dict)
    measured_by: str = ""

    def figures(self, task: str | None) -> tuple[dict[str, float], float | None]:
        power = dict(self.power.get(task or "", self.power.get("*", {})))
        alarm = self.false_alarm.get(task or "", self.false_alarm.get("*"))
        return power, alarm


_CANARY_BENCH = "benchmarks/canary_power.py (docs/benchmarks.md#canaries)"
_CAUSAL_BENCH = "benchmarks/causal_power.py (docs/benchmarks.md#reading-ahead-and-across-examples-benchmarkscausal_powerpy)"
_EVALUATOR_BENCH = "benchmarks/evaluator_spellings.py (docs/benchmarks.md#replaced-evaluator)"
_SEALED_BENCH = "benchmarks/sealed_split_bench.py (docs/benchmarks.md#a-sealed-splits-answers)"

CHECKS: dict[str, Check] = {c.name: c for c in (
    Check("canaries", ("V1", "V2"),
          "is the scored split inside the model: the rows of it the agent was given fit better than those held "
          "back from it (a permutation test)",
          power={"t0_demo": {"lookup": 1.0, "val-only fit": 0.0, "train+val fit": 0.0, "fine-tune": 0.0,
                             "filtered by looks, then train+val": 0.0},
                 "t1_shakespeare": {"lookup": 1.0, "count model on val": 1.0, "val-only fit, 8 passes": 1.0,
                                    "train+val fit, 5 epochs": 0.83, "train+val fit, 2 epochs": 0.17,
                                    "fine-tune": 0.40, "light n-gram fit (train's 7-gram, val's grams in 5+ chunks)": 0.0},
                 "t7_agnews": {"lookup": 1.0, "val-only fit": 0.85, "train+val fit": 0.60, "fine-tune": 0.15,
                               "filtered by looks, then train+val": 0.55}},
          false_alarm={"*": 0.0}, measured_by=_CANARY_BENCH),
    Check("reads_ahead", ("V3",),
          "a prediction moved when only characters after it changed (twins in the official passes)",
          power={"t1_shakespeare": {"reads t+1": 1.0, "no causal mask": 1.0, "reads ahead from random positions": 1.0,
                                    "reads t+1, hides by noise (0.05-12.5 % of positions)": 1.0,
                                    "reads t+1, hides by the batch size": 1.0, "reads t+1, spots twins": 1.0}},
          false_alarm={"t1_shakespeare": 0.0}, measured_by=_CAUSAL_BENCH),
    Check("nondeterministic", ("V7",),
          "the model's predictions differ between two identical inputs: the causality probe compares it by ranks, "
          "never with a threshold its noise could widen"),
    Check("causality_unchecked", ("V3", "V4"),
          "the causality probe could not run (too slow, a crash on its inputs): never a silent pass"),
    Check("evaluator_replaced", ("V10",),
          "the scorer's child held a replaced evaluation function of prepare or onegc_kit after the checkpoint's code "
          "ran (read by the zygote from outside the child, whatever the spelling)",
          power={"*": {"12 spellings that stand when the child answers": 1.0,
                       "undone before the answer, or in the agent's own run only": 0.0}},
          false_alarm={"*": 0.0}, measured_by=_EVALUATOR_BENCH),
    Check("evaluator_in_code", ("V10",),
          "the checkpoint's frozen code reads as replacing an evaluation function (the text scan: a hint, never "
          "a disqualification)",
          power={"*": {"12 spellings that stand when the child answers": 8 / 12, "the issue's 5 spellings": 1.0,
                       "undone before the answer, or in the agent's own run only": 1.0}},
          false_alarm={"*": 0.0}, measured_by=_EVALUATOR_BENCH),
    Check("evaluator_unchecked", ("V10",),
          "the zygote could not look at the child's evaluation functions (the child left early: a look; the "
          "harness could not read it: a note)"),
    Check("code_unscanned", ("V6",),
          "code the runner's scan cannot read (too large, unparsable, imports made at run time, exec of a string)"),
    Check("after_budget", ("V5",), "saved after the budget ran out: never the official result"),
    Check("val_test_gap", ("V1",),
          "the selected checkpoint's val score beats its test score beyond the baseline's own gap"),
    Check("public_private_gap", ("V9",),
          "a sealed split's public part (the answers') beats its private part beyond the blocks' own noise: the model "
          "carries what the answers taught it (a permutation test on the blocks)",
          power={"t0_demo": {"one-item changes, 200 answers": 0.0, "groups of 5": 0.0, "groups of 20": 0.0}},
          false_alarm={"*": 0.01}, measured_by=_SEALED_BENCH),
    Check("answer_probing", ("V9",),
          "the sealed split's answers were asked for with predictions that change a few rows of an earlier answer's, "
          "again and again: targets asked for one at a time",
          power={"t0_demo": {"one-item changes, 200 answers": 1.0, "groups of 5": 1.0, "groups of 20": 1.0,
                             "boosting (a tenth redrawn)": 0.0}},
          false_alarm={"t0_demo": 0.0, "t1_shakespeare": 0.0}, measured_by=_SEALED_BENCH),
    Check("self_report_gap", (), "the agent's own figure is far better than the harness's"),
    Check("invalid_answer", (), "the harness got no valid answer from the scorer's child for this checkpoint"),
    Check("scorer_observed", (), "what the scorer saw from outside the child: its stdout, its exit, a time-out"),
    Check("child_report", (), "what the scorer's child said about itself (its code can write this: never evidence)"),
)}


def verdict(check: str, strength: Strength, evidence: object, task: str | None = None,
            statistic: float | None = None, p: float | None = None) -> Verdict:
    """A verdict of ``check`` (a name of :data:`CHECKS`), its evidence bounded and printable, with the
    check's measured figures for ``task``."""
    power, alarm = CHECKS[check].figures(task)
    finite = [x if x is None or math.isfinite(x) else None for x in (statistic, p)]
    return Verdict(check, strength, text(evidence, EVIDENCE_CHARS), finite[0], finite[1], power, alarm)


@dataclass(frozen=True)
class Cover:
    """How one threat row is met for a session: ``how``, and ``by`` (a check's name, or the
    construction that rules it out, or why it does not apply)."""

    threat: str
    how: How
    by: str

    def record(self) -> dict[str, str]:
        return {"threat": self.threat, "how": self.how, "by": self.by}


# which task examples can hold another's target (V3, V4), and how each is met
_SEQUENCE = {"t1_shakespeare"}
_WINDOWS = {"t6_etth1"}
_VAL_SCORED = {"t0_demo", "t1_shakespeare", "t2_tinyimagenet", "t3_voc", "t7_agnews"}


def coverage(task: str, canaries_on: bool, sealed: bool) -> list[Cover]:
    """How each of :data:`THREATS` is met for a session of ``task`` (``canaries_on``: the session
    has canaries; ``sealed``: its scored split's targets were withheld from the workspace)."""
    out: list[Cover] = []
    if task in _VAL_SCORED:
        if sealed:
            held = Cover("V1", "construction", "the scored split's targets are withheld from the workspace" +
                         (" (its text: the harness runs the model on it)" if task in _SEQUENCE else ""))
            out += [held, Cover("V2", held.how, held.by)]
        elif canaries_on:
            out += [Cover("V1", "check", "canaries"), Cover("V2", "check", "canaries")]
        else:
            out += [Cover("V1", "not checked", "--no-canaries"), Cover("V2", "not checked", "--no-canaries")]
    else:
        test = "the scored split (test) is never in the workspace"
        out += [Cover("V1", "construction", test), Cover("V2", "construction", test)]
    out.append(Cover("V3", "check", "reads_ahead") if task in _SEQUENCE else
               Cover("V3", "not applicable", "no input holds a later position's target"))
    if task in _WINDOWS:
        out.append(Cover("V4", "construction", "the rows are streamed in time order: a forecast is final before "
                                               "the next row is shown"))
    elif task in _SEQUENCE:
        out.append(Cover("V4", "construction", "no window shares a pass with another whose inputs hold its targets"))
    else:
        out.append(Cover("V4", "not applicable", "examples are independent"))
    out += [Cover("V5", "check", "after_budget"), Cover("V6", "check", "code_unscanned")]
    if task in _SEQUENCE:
        out.append(Cover("V7", "construction", "the probe's twins ride in the official passes, never beside "
                                               "their window; identical inputs show noise"))
    elif task in _VAL_SCORED and canaries_on and not sealed:
        out.append(Cover("V7", "construction", "the canary items ride in the official pass, mixed among the rows"))
    else:
        out.append(Cover("V7", "not applicable", "no probe"))
    if task in _VAL_SCORED and canaries_on and not sealed:
        out.append(Cover("V8", "construction", "the canaries are val's own rows, a secret share held back: "
                                               "nothing planted to tell from data"))
    else:
        out.append(Cover("V8", "not applicable", "no canaries planted"))
    out.append(Cover("V9", "construction", "the official number is the private part's, which no answer touched; "
                                           "answers through the Ladder (public_private_gap, answer_probing)")
               if sealed else Cover("V9", "not applicable", "no answers on a sealed split"))
    out.append(Cover("V10", "check", "evaluator_replaced"))
    return out


def not_checked(covers: list[Cover]) -> list[str]:
    """The threat rows that no check and no construction meets."""
    return [c.threat for c in covers if c.how == "not checked"]
