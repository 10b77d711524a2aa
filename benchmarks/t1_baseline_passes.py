"""T1's baseline scores the same gathered from its official passes as shown whole (issue 46).

    python benchmarks/t1_baseline_passes.py [--from DIR] [--seed 0]

Builds T1's baseline GPT from ``tasks/t1_shakespeare/train.py`` with its own configuration, weights as
initialised (``--seed``), and scores it through a session's sealed scorer twice: as sessions do (val's
windows and their twins spread over four passes, runner/integrity/passes.py) and with val shown whole
and alone. Prints both values, whether they are bit for bit the same, the probe's verdicts and the
time each took.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tasks")]

from tests.integrity import causal_models as cm  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--from", dest="raw", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not (args.raw / "tinyshakespeare").is_dir():
        print(f"error: {args.raw / 'tinyshakespeare'} not found: pass --from DIR holding tinyshakespeare/", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="onegc-t1-baseline-") as tmp:
        data = cm.prepare("t1_shakespeare", Path(tmp) / "data" / "t1_shakespeare", args.raw / "tinyshakespeare")
        os.environ["ONEGC_DATA_DIR"] = str(data)
        sys.path.insert(0, str(REPO / "tasks" / "t1_shakespeare"))
        import prepare  # the pristine task module, as a run script imports it

        source = (REPO / "tasks" / "t1_shakespeare" / "train.py").read_text()
        train = types.ModuleType("train")
        exec(compile(source.split('if __name__ == "__main__":')[0], "train.py", "exec"), train.__dict__)
        config = {"vocab_size": len(prepare.vocab()), "block_size": train.BLOCK_SIZE, "n_layer": train.N_LAYER,
                  "n_head": train.N_HEAD, "n_embd": train.N_EMBD, "dropout": train.DROPOUT}
        torch.manual_seed(args.seed)
        model = train.build_model(config)
        bench = cm.Bench("t1_shakespeare", data, Path(tmp) / "runs" / "t1", timeout_s=3000)
        try:
            started = time.perf_counter()
            laid, outcome = bench.score(source, config, model)
            laid_s = time.perf_counter() - started
            started = time.perf_counter()
            whole, _ = bench.score(source, config, model, probe=False)
            whole_s = time.perf_counter() - started
        finally:
            bench.close()
    print(f"config {config}")
    print(f"passes: {laid.value!r} ({laid_s:.0f} s; verdicts {[(v.check, v.strength) for v in laid.verdicts]}; "
          f"floor {outcome.floor:.3g}, largest twin distance {outcome.worst:.3g}, copies' noise {outcome.noise:.3g})")
    print(f"whole:  {whole.value!r} ({whole_s:.0f} s)")
    same = laid.value == whole.value
    print("bit for bit" if same else f"differ by {abs((laid.value or 0) - (whole.value or 0)):.3g}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
