"""A reviewer's bundle (``onegc bundle``, ``onegc verify FILE.onegc``): a small study written on one
home and verified in a fresh home on the same machine reproduces every cell of its history matrix;
its snapshot objects are stored once; a session tampered with before bundling is caught there."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from onegc_tui.cli.main import main
from tests.helpers import SHORT_DEMO, start_session, wait_for

pytestmark = pytest.mark.slow
STUDY = """name = "mini"
tasks = ["t0"]
repeats = 1
[budget]
minutes = 0.5
[[agents]]
label = "quick"
adapter = "scripted"
pace_s = 0
args = ["--runs", "2", "--epochs", "3"]  # a short session: tests/helpers.py SHORT_DEMO
[[agents]]
label = "steady"
adapter = "scripted"
pace_s = 0.5
args = ["--runs", "2", "--epochs", "3"]
"""


@pytest.fixture(scope="module")
def study_home(tmp_path_factory, demo_data) -> tuple[Path, Path]:
    """A home that ran the study file's two sessions (as `onegc study` names them), and the file."""
    root = tmp_path_factory.mktemp("bundle")
    home = root / "home"
    (home / "data").mkdir(parents=True)
    shutil.copytree(demo_data, home / "data" / "t0_demo")
    study = root / "mini.toml"
    study.write_text(STUDY)
    started = [start_session(home, f"mini--{label}--t0--r1", study="mini", budget_s=30, pace_s=pace,
                              agent_args=SHORT_DEMO)
               for label, pace in (("quick", 0.0), ("steady", 0.5))]
    for paths in started:
        wait_for(lambda p=paths: (p.root / "seal.json").exists(), 300, f"{paths.session_id}'s seal")
    return home, study


def onegc(home: Path, monkeypatch, *args: str):
    monkeypatch.setenv("ONEGC_HOME", str(home))
    return CliRunner().invoke(main, list(args))


def fresh_home(tmp_path: Path, demo_data: Path) -> Path:
    """Another home on this machine, with the task prepared and nothing else."""
    home = tmp_path / "reviewer"
    (home / "data").mkdir(parents=True)
    shutil.copytree(demo_data, home / "data" / "t0_demo")
    return home


def test_a_bundle_verified_in_a_fresh_home_reproduces_every_cell(study_home, tmp_path, demo_data, monkeypatch):
    home, study = study_home
    bundle = tmp_path / "mini.onegc"
    r = onegc(home, monkeypatch, "bundle", "--study", str(study), "-o", str(bundle))
    assert r.exit_code == 0, r.output
    with zipfile.ZipFile(bundle) as z:
        index = json.loads(z.read("bundle.json"))
        objects = [n for n in z.namelist() if n.startswith("objects/")]
    assert index["sessions"] == ["mini--quick--t0--r1", "mini--steady--t0--r1"]
    assert len(objects) == len(set(objects)) == len(index["objects"])  # each content once
    assert index["harness"]["packages"] and index["tasks"]["t0_demo"]["files"]
    reviewer = fresh_home(tmp_path, demo_data)
    r = onegc(reviewer, monkeypatch, "verify", str(bundle))
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert out.count(": reproduced (") == 2 and "t0_demo: data checksums match the bundle's" in out, out
    rows = [line for line in out.splitlines() if line.startswith("mini (demo tasks)")]
    assert len(rows) == 2 and all("✓" in row for row in rows), out  # every cell of the study's matrix
    assert not (reviewer / "runs").exists()  # the reviewer's home is left as it was


def test_a_session_tampered_with_before_bundling_is_caught_in_the_fresh_home(study_home, tmp_path, demo_data,
                                                                               monkeypatch):
    home, study = study_home
    copy = tmp_path / "edited"
    shutil.copytree(home, copy, symlinks=True, ignore=shutil.ignore_patterns("*.sock"))
    result = copy / "runs" / "mini--steady--t0--r1" / "result.json"
    doc = json.loads(result.read_text())
    doc["value"] = 1.0
    result.write_text(json.dumps(doc))
    bundle = tmp_path / "edited.onegc"
    assert onegc(copy, monkeypatch, "bundle", "--study", str(study), "-o", str(bundle)).exit_code == 0
    r = onegc(fresh_home(tmp_path, demo_data), monkeypatch, "verify", str(bundle))
    assert r.exit_code == 8, r.output
    assert "mini--steady--t0--r1: TAMPERED: result.json: edited since the session sealed it" in r.stdout
    row = next(line for line in r.stdout.splitlines() if line.startswith("mini (demo tasks)") and "steady" in line)
    assert "✗1" in row and "✓" not in row, r.stdout
