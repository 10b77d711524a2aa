"""Caps per session (issue 28): a greedy agent under ``--memory 512M --max-processes 64`` is held
at the caps, and the runner survives and says why. Judged from outside: events.jsonl, the end
detail, result.json."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from onegc_tui.cli.main import main
from runner.sandbox.caps import default_caps, parse_size
from tests.helpers import events, wait_event, write_agent

GREEDY = """
import json, os, subprocess, sys, time
# a fork bomb held at the cap: count the children that could be made
children, refused = [], None
for _ in range(500):
    try:
        pid = os.fork()
    except OSError as exc:
        refused = exc.errno
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    children.append(pid)
made = len(children)
for pid in children:  # room for the next attack
    os.kill(pid, 9)
    os.waitpid(pid, 0)
# a RAM hog: 2 GiB, every page touched, in a process of its own
hog_code = "b = bytearray(2 << 30)\\nfor i in range(0, len(b), 4096): b[i] = 1\\nprint('survived')"
hog = subprocess.run([sys.executable, "-c", hog_code], capture_output=True, text=True)
open("greedy.json", "w").write(json.dumps({"made": made, "refused": refused, "hog": hog.returncode,
                                           "hog_out": hog.stdout}))
"""


def test_sizes_parse_in_binary_units_and_defaults_come_from_the_machine():
    assert parse_size("512M") == 512 << 20 and parse_size("2g") == 2 << 30 and parse_size("1.5GiB") == 3 << 29
    for bad in ("lots", "-1G", "12X", "1M"):  # 1M: below what an agent needs to start
        with pytest.raises(ValueError):
            parse_size(bad)
    caps = default_caps()
    assert caps.memory_bytes > 64 << 20 and caps.max_processes >= 4096
    assert default_caps(512 << 20, 64).describe() == "memory 512M, 64 processes"


def test_a_study_file_sets_the_caps_of_its_sessions():
    from runner.launch.study import StudySpec, plan

    study = StudySpec(name="capped", tasks=["t0"], agents=[{"adapter": "scripted"}], memory="2G", max_processes=128)
    (one,) = plan(study)
    assert one.config.memory_bytes == 2 << 30 and one.config.max_processes == 128
    with pytest.raises(ValueError, match="not a size"):
        StudySpec(name="capped", tasks=["t0"], agents=[{"adapter": "scripted"}], memory="lots")


def test_a_bad_cap_is_refused_in_one_line(home):
    r = CliRunner().invoke(main, ["run", "t0", "--agent", "scripted", "--detach", "--memory", "lots"])
    assert r.exit_code == 2 and "not a size" in r.output and not (home / "runs").exists()


@pytest.mark.slow
def test_a_greedy_agent_is_held_at_its_caps_and_the_runner_says_why(home, tmp_path):
    command = write_agent(tmp_path, "greedy.py", GREEDY)
    r = CliRunner().invoke(main, ["run", "t0", "--agent", "command", "--detach", "--budget", "90s", "--memory", "512M",
                                  "--max-processes", "64", "--", *command], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    (folder,) = (home / "runs").iterdir()
    from runner.wire.paths import SessionPaths

    wait_event(SessionPaths(folder), "session_ended", timeout=180)  # written after result.json
    evs = events(SessionPaths(folder))
    started = next(e for e in evs if e["type"] == "session_started")
    caps = started["contract"]["caps"]
    assert caps["memory_bytes"] == 512 << 20 and caps["max_processes"] == 64
    greedy = json.loads((folder / "workspace" / "greedy.json").read_text())
    assert greedy["made"] < 64 and greedy["refused"] == 11, greedy  # EAGAIN at the cap
    assert greedy["hog"] != 0 and "survived" not in greedy["hog_out"], greedy  # stopped at 512M, not the host's RAM
    warnings = {e["code"]: e["message"] for e in evs if e["type"] == "warning"}
    if "memory cgroup" in caps["enforced_by"]:  # else RLIMIT_DATA: the hog's own MemoryError
        assert greedy["hog"] == -9 and "memory cap (512M)" in warnings["oom"]
    if "pids cgroup" in caps["enforced_by"]:
        assert "cap of 64 processes" in warnings["process_cap"]
    ended = next(e for e in evs if e["type"] == "session_ended")
    assert ended["reason"] == "completed", ended  # the agent went on past both caps; the runner too
    assert "killed at the memory cap" in ended["detail"] or "refused at the cap" in ended["detail"], ended
    result = json.loads((folder / "result.json").read_text())
    assert result["end_reason"] == "completed" and "at the cap of 64" in result["end_detail"]
    # every view says the session ran against a cap (issue 37): its row, the history cell with a count
    # and its footnote, the CSV and the exports' metadata
    listed = json.loads(CliRunner().invoke(main, ["sessions", "--json"], catch_exceptions=False).output)
    (row,) = listed
    assert row["caps_reached"] >= 1, row
    table = CliRunner().invoke(main, ["history", "--no-paper", "--demo"], catch_exceptions=False).output
    assert "¢1" in table and "cap stopped the agent of n of its sessions" in table, table
    csv_out = CliRunner().invoke(main, ["history", "--no-paper", "--demo", "--format", "csv"],
                                 catch_exceptions=False).stdout
    header, first = csv_out.splitlines()[:2]
    assert dict(zip(header.split(","), first.split(","), strict=False))["n_capped"] == "1", csv_out
