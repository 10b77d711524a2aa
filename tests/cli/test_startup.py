"""Start-up: ``onegc --help``, ``onegc sessions`` and ``onegc tasks`` import nothing heavy (no
timing here: benchmarks/startup_bench.py measures; this keeps the imports that made them fast
from coming back), and the task facts they show are the registry's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from onegc_tui.views import task_facts
from tests.homes import build_crowd

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("pydantic", "pydantic_core", "watchdog", "numpy", "sqlite_utils", "textual", "rich", "onegc_tui.results.matrix",
         "runner.launch.study", "runner.wire.events")
PROBE = """
import json, sys
from onegc_tui.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("\\nMODULES " + json.dumps(sorted(sys.modules)))
"""


def modules_after(argv: list[str], home: Path, cache: Path) -> set[str]:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=REPO, check=True,
                         env=dict(os.environ, ONEGC_HOME=str(home), XDG_CACHE_HOME=str(cache)))
    return set(json.loads(out.stdout.rsplit("MODULES ", 1)[1]))


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["--help"], ["sessions"], ["tasks"]])
def test_the_listing_commands_start_without_pydantic_watchdog_or_textual(argv, home, tmp_path):
    build_crowd(home, n_ended=4)
    modules_after(argv, home, tmp_path)  # the first: the task facts are validated and kept, the store caught up
    loaded = modules_after(argv, home, tmp_path)
    assert {m for m in loaded if m.split(".")[0] in HEAVY or m in HEAVY} == set()
    assert "onegc_tui.cli" in loaded


def test_the_history_formats_named_for_its_option_are_the_exports():
    from onegc_tui.cli.history import FORMATS
    from onegc_tui.results.export import FORMATS as EXPORTS

    assert FORMATS == EXPORTS


def test_task_facts_are_the_registrys_and_follow_its_files(tmp_path, monkeypatch):
    from tasks import TASKS_DIR, all_tasks

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    want = {s.id: (s.short, s.title, s.metric_label, s.higher_is_better, s.budget_minutes, s.baseline_score)
            for s in all_tasks().values()}
    first = task_facts.task_facts()  # validated now
    kept = list((tmp_path / "cache" / "onegc").glob("task-facts-*.json"))
    assert len(kept) == 1
    again = task_facts.task_facts()  # read back
    for facts in (first, again):
        assert list(facts) == list(want)
        assert {k: (f.short, f.title, f.metric_label, f.higher_is_better, f.budget_minutes, f.baseline_score)
                for k, f in facts.items()} == want
    assert task_facts.find(again, "T6").id == "t6_etth1" and task_facts.find(again, "t6_etth1").short == "t6"
    assert task_facts.find(again, "t99") is None
    kept[0].write_text("[{\"id\": 1}]")  # a damaged cache: validated again, and rewritten
    assert task_facts.task_facts() == first
    assert json.loads(kept[0].read_text())[0]["id"] == next(iter(want))

    copy = tmp_path / "tasks"  # the key follows the registry's code and every task.toml
    copy.mkdir()
    shutil.copy(TASKS_DIR / "__init__.py", copy / "__init__.py")
    shutil.copytree(TASKS_DIR / "t6_etth1", copy / "t6_etth1")
    key = task_facts.registry_key(copy)
    toml = copy / "t6_etth1" / "task.toml"
    toml.write_text(toml.read_text().replace("budget_minutes = 40", "budget_minutes = 41"))
    assert task_facts.registry_key(copy) != key
    toml.write_text(toml.read_text().replace("budget_minutes = 41", "budget_minutes = 40"))
    assert task_facts.registry_key(copy) == key
    (copy / "__init__.py").write_text((copy / "__init__.py").read_text() + "\n# a change of the schema\n")
    assert task_facts.registry_key(copy) != key
