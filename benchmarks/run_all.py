"""Every benchmark, one table: each figure beside this machine's own limit, measured in the same run.

    make bench                                   # = python benchmarks/run_all.py
    python benchmarks/run_all.py --quick         # a pass of a few minutes: smaller sizes, fewer repeats
    python benchmarks/run_all.py --skip sandbox,scoring,history --json out.json

Absolute figures drift between machines and between minutes of one machine, so each row puts its
figure beside a limit of this machine measured in the same run: ingest and reindex beside a raw
``executemany`` of the same rows into the same schema (1 000-row WAL transactions), the monitor's
CPU beside an idle Textual app with one ``Static``, start-up beside ``python -c pass``, the
sandbox beside the same work unsealed. The ratio is figure / limit. Each benchmark is one of
the scripts beside this one (ingest_bench, monitor_bench, startup_bench, sandbox_bench,
scoring_bench, flood_bench); this file only runs them and prints the table. The load average is printed with
each row: other work on the machine shows up in the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import ingest_bench  # noqa: E402
import monitor_bench  # noqa: E402
import pyc_files  # noqa: E402
import startup_bench  # noqa: E402

SECTIONS = ("ingest", "monitor", "study", "startup", "reindex", "history", "sandbox", "scoring", "floods",
            "gpu")  # in this order
# a study of the paper's size, all live at once: 7 tasks × 5 repeats × 3 agents (issue 29)
STUDY_SESSIONS = 105
# transcript lines/s of each: a burst pace, far above what a real agent session writes on average
# (a line every few seconds in the captured Claude Code and Codex transcripts), so the figure is a bound
STUDY_RATE = 10.0


@dataclass
class Row:
    what: str
    figure: str
    limit: str
    ratio: str
    target: str
    met: bool | None  # None: no target, or not measured
    load: float | None = None

    @property
    def verdict(self) -> str:
        return {True: "met", False: "MISSED", None: "—"}[self.met]


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()} {platform.release()}"


def load() -> float:
    return os.getloadavg()[0]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def rate(x: float) -> str:
    return f"{x:,.0f}/s"


# ----------------------------------------------------------------------------- sections

def ingest_rows(quick: bool) -> list[Row]:
    n, reps = (60_000, 2) if quick else (200_000, 3)
    t = ingest_bench.throughput(n, reps)
    eps, raw, ratio = (statistics.median(t[k]) for k in ("ingest", "raw", "ratios"))
    two, two_ratio = statistics.median(t["catch_up"]), statistics.median(t["catch_up_ratios"])
    rows = [Row(f"ingest throughput, one process ({n:,} events, 4 sessions, from scratch; median of {reps})", rate(eps),
                f"raw executemany {rate(raw)}", f"{ratio:.0%}", "≥ 50 000/s and ≥ 50 % of raw",
                eps >= 50_000 and ratio >= 0.5, max(t["load"])),
            Row(f"catch-up from scratch, two processes (the same {n:,} events)", rate(two), f"raw executemany {rate(raw)}",
                f"{two_ratio:.0%}", "≥ 50 % of raw", two_ratio >= 0.5, max(t["load"]))]
    seconds = 4 if quick else 10
    lat = ingest_bench.latency(2000, seconds)
    p99 = ingest_bench.pct(lat, 0.99)
    rows.append(Row(f"append → commit p99, one session writing 2 000 events/s for {seconds} s", ms(p99), "—", "—",
                    "< 100 ms", p99 < 0.1, load()))
    return rows


def monitor_rows(quick: bool) -> list[Row]:
    presses, idle = (40, 8.0) if quick else (100, 20.0)
    live = monitor_bench.live_figures(8, 200.0, presses, idle)
    p99 = monitor_bench.pct(live["latency"], 0.99)
    static = max(live["static"], 0.05)  # below one clock tick of psutil over the interval: its resolution
    return [
        Row(f"key → screen p99, 8 sessions × 200 lines/s ({presses} presses)", ms(p99), "—", "—", "< 100 ms",
            p99 < 0.1, live["load_latency"]),
        Row("monitor CPU while those 8 stream", f"{live['busy']:.1f} % of a core",
            f"idle one-Static app {live['static']:.2f} %", f"{live['busy'] / static:.0f}×", "< 30 %",
            live["busy"] < 30, live["load_busy"]),
        Row("idle monitor, 8 running sessions, 1 Hz GPU samples + 5 s heartbeats", f"{live['tick']:.2f} % of a core",
            f"idle one-Static app {live['static']:.2f} %", f"{live['tick'] / static:.0f}×", "< 2 %", live["tick"] < 2,
            live["load_tick"]),
        Row("idle monitor, 8 running sessions, no events", f"{live['quiet']:.2f} % of a core",
            f"idle one-Static app {live['static']:.2f} %", f"{live['quiet'] / static:.0f}×", "—", None,
            live["load_quiet"]),
    ]


def study_rows(quick: bool) -> list[Row]:
    presses, idle = (40, 8.0) if quick else (100, 20.0)
    n, per = STUDY_SESSIONS, STUDY_RATE
    live = monitor_bench.live_figures(n, per, presses, idle)
    p99 = monitor_bench.pct(live["latency"], 0.99)
    static = max(live["static"], 0.05)
    events = n * (per + 1 + 0.2)  # and a GPU sample a second, a heartbeat every 5 s
    return [
        Row(f"key → screen p99, a study's {n} live sessions × {per:.0f} lines/s ({events:,.0f} events/s; {presses} presses)",
            ms(p99), "—", "—", "< 100 ms", p99 < 0.1, live["load_latency"]),
        Row(f"monitor CPU while those {n} stream", f"{live['busy']:.1f} % of a core",
            f"idle one-Static app {live['static']:.2f} %", f"{live['busy'] / static:.0f}×", "< 30 %",
            live["busy"] < 30, live["load_busy"]),
        Row(f"idle monitor, {n} running sessions, 1 Hz GPU samples + 5 s heartbeats ({n * 1.2:.0f} events/s)",
            f"{live['tick']:.2f} % of a core", f"idle one-Static app {live['static']:.2f} %",
            f"{live['tick'] / static:.0f}×", "—", None, live["load_tick"]),
        Row(f"idle monitor, {n} running sessions, no events", f"{live['quiet']:.2f} % of a core",
            f"idle one-Static app {live['static']:.2f} %", f"{live['quiet'] / static:.0f}×", "—", None,
            live["load_quiet"]),
    ]


def startup_rows(quick: bool) -> list[Row]:
    import shutil
    import tempfile

    runs = 5 if quick else 15
    tmp = Path(tempfile.mkdtemp(prefix="onegc-startbench-"))
    try:
        times = startup_bench.measure(runs, startup_bench.build_home(tmp / "home"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = statistics.median(times["pass"])
    rows = []
    for name in ("--help", "sessions", "tasks"):
        med = statistics.median(times[name])
        what = {"--help": "`onegc --help` start-up", "sessions": "`onegc sessions` (27 sessions, store current)",
                "tasks": "`onegc tasks` start-up"}[name]
        rows.append(Row(f"{what}, median of {runs}", ms(med), f"`python -c pass` {ms(base)}", f"{med / base:.1f}×",
                        "< 300 ms", med < startup_bench.TARGET_MS / 1000, load()))
    return rows


def reindex_size(quick: bool, sessions: int, events: int) -> tuple[int, int]:
    """Sessions and events of the reindexed store (``--quick``: at most 1 000 and 1 M)."""
    return (min(sessions, 1_000), min(events, 1_000_000)) if quick else (sessions, events)


def reindex_rows(quick: bool, sessions: int, events: int) -> list[Row]:
    sessions, events = reindex_size(quick, sessions, events)
    r = ingest_bench.reindex(sessions, events)
    return [Row(f"`onegc reindex`, {r['sessions']:,} sessions / {r['events']:,} events "
                f"({r['db_bytes'] / 2**20:,.0f} MiB store)", rate(r["reindex"]), f"raw executemany {rate(r['raw'])}",
                f"{r['ratio']:.0%}", "≥ 35 % of raw", r["ratio"] >= 0.35, r["load"])]


def history_size(quick: bool) -> tuple[int, int]:
    """Sessions and events of the history store."""
    return (10_000, 1_000_000) if quick else (100_000, 10_000_000)


def history_rows(quick: bool) -> list[Row]:
    sessions, events = history_size(quick)
    h = monitor_bench.history_figures(sessions, events)
    worst = max([h["first"], *h["again"]])
    return [
        Row(f"history matrix over {sessions:,} sessions / {h['events']:,} events: query + build, median of 5",
            ms(statistics.median(h["direct"])), "—", "—", "—", None, h["load"]),
        Row("the monitor over that store: `h` → matrix drawn (first; slowest of 5 reopenings)",
            f"{ms(h['first'])}; {ms(max(h['again']))}", "—", "—", "< 300 ms", worst < 0.3, h["load"]),
    ]


def sandbox_rows(quick: bool) -> list[Row]:
    import sandbox_bench

    from runner.sandbox.bwrap import status

    if not status().ok:
        return [Row("sandbox start-up", f"not measured: {status().detail}", "—", "—", "≤ +150 ms", None)]
    sealed, unsealed = sandbox_bench.bench_startup(2 if quick else 5)
    s, u = statistics.median(sealed), statistics.median(unsealed)
    added = (s - u) * 1000
    rows = [Row("session start-up, runner start → the agent's first line, sealed", ms(s), f"`--unsealed` {ms(u)}",
                f"{s / u:.2f}× (+{added:.0f} ms)", "≤ +150 ms", added <= sandbox_bench.START_TARGET_MS, load())]
    data = HERE.parent.parent / "shared" / "data" / "etth1"
    if quick or not data.is_dir():
        why = "--quick" if quick else f"{data} absent"
        rows.append(Row("t6 baseline training, 3 epochs on the CPU, inside vs outside the sandbox",
                        f"not measured ({why})", "—", "—", "no slower than outside", None))
        return rows
    inside, outside = sandbox_bench.bench_training(sandbox_bench.TRAINING_RUNS, data)
    ratio, allowance, ok = sandbox_bench.training_verdict(inside, outside)
    rows.append(Row(f"t6 baseline training, 3 epochs on the CPU (its training loop), inside the sandbox,"
                    f" median of {len(inside)}", f"{statistics.median(inside):.2f} s",
                    f"outside {statistics.median(outside):.2f} s", f"{ratio:.3f}×",
                    f"no slower than outside, beyond its spread or a tick of its clock (+{allowance:.0%})",
                    ok, load()))
    return rows


def scoring_rows(quick: bool) -> list[Row]:
    import scoring_bench

    from runner.sandbox.bwrap import status

    if not status().ok:
        return [Row("live scoring overhead per checkpoint", f"not measured: {status().detail}", "—", "—", "< 1 s", None)]
    rows = []
    data = HERE.parent.parent / "shared" / "data" / "etth1"
    tasks = ["t0"] + ([] if quick or not data.is_dir() else ["t6"])
    for task in tasks:
        r = scoring_bench.run(task, 3 if quick else 6, data if task == "t6" else None)
        o, evals = sorted(r["overheads"]), r["evals"]
        rows.append(Row(f"{task}: checkpoint saved → live score on record, less the evaluation ({len(o)} checkpoints)",
                        f"median {ms(statistics.median(o))}, max {ms(o[-1])}",
                        f"the evaluation itself {ms(statistics.median(evals))}",
                        f"{statistics.median(o) / statistics.median(evals):.1f}×", "< 1 s (max)",
                        o[-1] < scoring_bench.TARGET_S, load()))
        per = r["official_phase_s"] / max(1, r["n_official"])
        official = [e["eval_s"] for e in r["official"]]
        rows.append(Row(f"{task}: official phase per re-evaluated checkpoint ({r['n_official']}; the agent's tree "
                        "stopped first)", f"{per:.2f} s",
                        f"their evaluations {ms(statistics.median(official))}" if official else "—",
                        f"{per / statistics.median(official):.1f}×" if official else "—", "—", None, load()))
    return rows


def flood_rows(quick: bool) -> list[Row]:
    """benchmarks/flood_bench.py's floods (issue 38): the record, the end delay, the snapshots and the
    readers against their bounds."""
    import flood_bench

    rows = []
    for section in flood_bench.SECTIONS:
        root = Path(tempfile.mkdtemp(prefix=f"onegc-flood-{section}-"))
        try:
            for r in flood_bench.RUNS[section](root, 0.3 if quick else 1.0):
                rows.append(Row(r["what"], r["figure"], r["bound"], f"{r['ratio']:.2f}", "≤ 1 (the bound)", r["met"],
                                load()))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return rows


def gpu_rows() -> list[Row]:
    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
    except Exception:  # no library, no driver, no device: all mean no GPU here
        count = 0
    why = "not measured: no GPU" if not count else "not measured: run benchmarks/device_check.sh on the GPU machine"
    return [Row("harness overhead on a GPU-bound baseline (runner, NVML sampling, live scoring vs the bare script)",
                why, "—", "—", "< 1 %", None)]


# ----------------------------------------------------------------------------- the table

def table(rows: list[Row]) -> str:
    head = "| what | figure | this machine's limit | ratio | target | met | load |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.what} | {r.figure} | {r.limit} | {r.ratio} | {r.target} | {r.verdict} | "
                     f"{'' if r.load is None else f'{r.load:.2f}'} |")
    return "\n".join(lines)


def disk_short(wanted: list[str], args: argparse.Namespace) -> str | None:
    """What to do, where the temp folder has too little room for the stores these sections write."""
    tmp = Path(tempfile.gettempdir())
    need = 0
    if "reindex" in wanted:
        need += ingest_bench.reindex_room(*reindex_size(args.quick, args.reindex_sessions, args.reindex_events))
    if "history" in wanted:
        need += monitor_bench.history_room(*history_size(args.quick))
    free = shutil.disk_usage(tmp).free
    if need <= free:
        return None
    return (f"make bench: {free / 2**30:.1f} GiB free under {tmp}, and these stores need about {need / 2**30:.1f} GiB:"
            " free some space, set TMPDIR to a roomier disk, or pass --reindex-events 1000000 (or --quick)")


def run_section(section: str, args: argparse.Namespace) -> list[Row]:
    """The rows of one section (one of :data:`SECTIONS`)."""
    if section == "reindex":
        return reindex_rows(args.quick, args.reindex_sessions, args.reindex_events)
    if section == "gpu":
        return gpu_rows()
    by_quick = {"ingest": ingest_rows, "monitor": monitor_rows, "study": study_rows, "startup": startup_rows,
                "history": history_rows,
                "sandbox": sandbox_rows, "scoring": scoring_rows, "floods": flood_rows}
    return by_quick[section](args.quick)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats (a few minutes)")
    ap.add_argument("--skip", default="", help=f"comma-separated sections to leave out: {', '.join(SECTIONS)}")
    ap.add_argument("--only", default="", help="comma-separated sections to run (default: all)")
    ap.add_argument("--reindex-sessions", type=int, default=10_000)
    ap.add_argument("--reindex-events", type=int, default=10_000_000,
                    help="events of the reindexed store (default: the issue's 10 M-event store, ~6 GiB under the"
                         " temp folder; its session folders are written once, in about a minute, and kept)")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = ap.parse_args()
    pyc_files.compile_sources()  # before anything is timed, as a user's first run writes them
    skip = {s for s in args.skip.split(",") if s}
    only = {s for s in args.only.split(",") if s} or set(SECTIONS)
    unknown = (skip | only) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections: {', '.join(sorted(unknown))} (choose from {', '.join(SECTIONS)})")
    wanted = [s for s in SECTIONS if s in only and s not in skip]
    short = disk_short(wanted, args)
    if short:
        print(short, file=sys.stderr)
        return 2

    started, start_load = time.time(), os.getloadavg()
    print(f"machine: {machine()}")
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in start_load)}"
          f"{' (quick pass)' if args.quick else ''}", flush=True)
    rows: list[Row] = []
    for section in wanted:
        t0 = time.time()
        got = run_section(section, args)
        rows += got
        print(f"  {section}: {time.time() - t0:.0f} s; " + "; ".join(f"{r.figure} ({r.verdict})" for r in got),
              file=sys.stderr, flush=True)
    print()
    print(table(rows))
    print()
    missed = [r for r in rows if r.met is False]
    print(f"{len([r for r in rows if r.met])} targets met, {len(missed)} missed, in {time.time() - started:.0f} s; "
          f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "start_load": start_load, "end_load": os.getloadavg(),
                                         "rows": [asdict(r) for r in rows]}, indent=1))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
