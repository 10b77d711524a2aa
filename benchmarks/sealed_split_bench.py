"""What a sealed scored split costs the agent (runner/integrity/sealed_split.py): how long
``prepare.evaluate`` waits for the harness's answer, against judging the same predictions in the
agent's own process as the paper's workspace does.

    python benchmarks/sealed_split_bench.py [--n 50]

In one process, as a session has them: t0's data prepared here, the runner's pristine judge
(``TaskJudge``), :class:`SealedAnswers` polling a workspace's ``.sealed/``, and the kit's
``ask_harness`` writing t0-shaped predictions (int64 [1 500]) and waiting. Printed: the latency of
an answer asked for alone (0.3 s apart: no rate limit in the way), the latency back to back (the
0.2 s spacing is then the floor), and the local judge's time for the same predictions.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tasks"))

import numpy as np  # noqa: E402
import onegc_kit as kit  # noqa: E402

from runner.scoring import sealed_split  # noqa: E402
from runner.scoring.scorer import TaskJudge  # noqa: E402
from tasks import get_task  # noqa: E402


class Events:
    """The session's event writer, as far as the answers use it: counted, not written."""

    def __init__(self) -> None:
        self.warnings = 0

    def emit(self, type_: str, **fields) -> None:
        self.warnings += type_ == "warning"


def timed(n: int, gap_s: float, predictions: np.ndarray) -> list[float]:
    out = []
    for _ in range(n):
        started = time.perf_counter()
        kit.ask_harness(predictions, "val", wait_s=60)
        out.append(time.perf_counter() - started)
        time.sleep(gap_s)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=50, help="answers of each kind")
    args = parser.parse_args(argv)
    spec = get_task("t0")
    with tempfile.TemporaryDirectory(prefix="sealed-bench-") as tmp:
        root = Path(tmp)
        data, workspace, answers = root / "data" / spec.id, root / "workspace", root / "answers"
        kit.prepare(__import__("importlib").import_module("t0_demo.prepare"), data)
        workspace.mkdir()
        judge = TaskJudge(spec, data)
        service = sealed_split.SealedAnswers(judge, "val", workspace, answers, Events(), cap=3 * args.n).start()
        os.environ.update(sealed_split.agent_vars("val", workspace, answers))
        predictions = np.random.default_rng(0).integers(0, 3, 1500)
        try:
            alone = timed(args.n, 0.3, predictions)
            back = timed(args.n, 0.0, predictions)
        finally:
            service.stop()
        local = []
        for _ in range(args.n):
            started = time.perf_counter()
            judge.judge(predictions, "val")
            local.append(time.perf_counter() - started)

    def line(what: str, xs: list[float]) -> str:
        q = statistics.quantiles(xs, n=20)
        return f"{what:<34} median {statistics.median(xs) * 1e3:7.1f} ms   p95 {q[18] * 1e3:7.1f} ms"

    print(f"t0, {args.n} answers each")
    print(line("sealed, asked alone", alone))
    print(line("sealed, back to back", back))
    print(line("judged locally (the paper's)", local))
    print(f"ratio sealed alone / local: {statistics.median(alone) / statistics.median(local):.0f}x; back to back: "
          f"{1 / statistics.median(back):.1f} answers/s (spacing {sealed_split.SPACING_S} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
