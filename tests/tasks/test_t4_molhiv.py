"""T4 (ogbg-molhiv): prepare from a tiny hiv.zip laid out like OGB's, train a few baseline steps
on CPU, score the checkpoint with the pristine prepare.py; member checksums, graph collation,
AUROC with ties and the privacy of the test labels; sealed scoring (inputs without labels,
predict, judge) gives the same numbers as the evaluate it replaced."""

from __future__ import annotations

import csv
import gzip
import hashlib
import itertools
import json
import sys
import zipfile

import numpy as np
import pytest

TASK = "t4_molhiv"
ARCHIVE = "hiv.zip"
ATOM_DIMS = [119, 4, 12, 12, 10, 6, 6, 2, 2]
BOND_DIMS = [5, 6, 2]
SPLIT_SIZES = {"train": 28, "valid": 6, "test": 6}
GRAPH_FILES = ["node_feat", "edges", "edge_feat", "node_ptr", "edge_ptr"]
# prepare.evaluate before sealed scoring (commit e5620db), verbatim: the reference that
# judge(predict(model, inputs(split))) must match to 1e-6 on every checkpoint.
OLD_EVALUATE = '''
def evaluate(model, split: str, device: str) -> dict:
    import torch

    graphs = load_graphs()
    idx, y = load_split(split)
    scores = []
    for i in range(0, len(idx), EVAL_BATCH):
        batch = collate_graphs(graphs, idx[i : i + EVAL_BATCH]).to(device)
        out = model(batch)
        if out.numel() != batch.num_graphs:
            shape = tuple(out.shape)
            raise kit.KitError(f"the model returned shape {shape} for {batch.num_graphs} graphs: expected [B] or [B, 1]")
        scores.append(out.reshape(-1).float().cpu())
    s = torch.cat(scores).numpy()
    if not np.isfinite(s).all():
        raise kit.KitError("the model outputs NaN or inf")
    return {"value": auroc(y, s), "n": len(y)}
'''


def _gz_csv(rows) -> bytes:
    text = "".join(",".join(str(v) for v in np.atleast_1d(row)) + "\n" for row in rows)
    return gzip.compress(text.encode(), mtime=0)


def make_molecules(seed: int = 0) -> dict:
    """40 small random molecules in OGB's raw layout: each bond stored once, local atom ids."""
    rng = np.random.default_rng(seed)
    g = sum(SPLIT_SIZES.values())
    n_nodes = rng.integers(1, 9, g)
    n_nodes[3] = 1  # a lone atom: a graph with no bonds
    bonds = [np.array([(rng.integers(0, j), j) for j in range(1, n)], dtype=np.int64).reshape(-1, 2) for n in n_nodes]
    order = rng.permutation(g)
    split = dict(zip(SPLIT_SIZES, np.split(order, np.cumsum(list(SPLIT_SIZES.values()))[:-1]), strict=True))
    labels = np.zeros(g, dtype=np.int64)
    for name, k in (("train", 4), ("valid", 2), ("test", 2)):  # both classes in every split
        labels[split[name][:k]] = 1
    return {
        "n_nodes": n_nodes, "bonds": bonds, "labels": labels, "split": split,
        "node_feat": np.stack([rng.integers(0, d, n_nodes.sum()) for d in ATOM_DIMS], axis=1),
        "bond_feat": np.stack([rng.integers(0, d, sum(map(len, bonds))) for d in BOND_DIMS], axis=1),
    }


def write_hiv_zip(path, mols: dict, tamper: str | None = None, drop: str | None = None) -> dict:
    """``hiv.zip`` as OGB ships it (members under ``hiv/``); returns each member's size and sha256."""
    members = {
        "mapping/mol.csv.gz": gzip.compress(
            ("HIV_active,smiles,mol_id\n" + "".join(f"{y},{'C' * n},{i}\n" for i, (y, n) in
             enumerate(zip(mols["labels"], mols["n_nodes"], strict=True)))).encode(), mtime=0),
        **{f"split/scaffold/{s}.csv.gz": _gz_csv(idx) for s, idx in mols["split"].items()},
        "raw/edge.csv.gz": _gz_csv(np.concatenate(mols["bonds"])),
        "raw/edge-feat.csv.gz": _gz_csv(mols["bond_feat"]),
        "raw/node-feat.csv.gz": _gz_csv(mols["node_feat"]),
        "raw/graph-label.csv.gz": _gz_csv(mols["labels"]),
        "raw/num-node-list.csv.gz": _gz_csv(mols["n_nodes"]),
        "raw/num-edge-list.csv.gz": _gz_csv([len(b) for b in mols["bonds"]]),
    }
    pins = {rel: {"size": len(b), "sha256": hashlib.sha256(b).hexdigest()} for rel, b in members.items()}
    if tamper:
        members[tamper] = gzip.compress(gzip.decompress(members[tamper]) + b"1,1,1\n", mtime=0)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("hiv/RELEASE_v1.txt", "May 4, 2020: First major release\n")
        for rel, blob in members.items():
            if rel != drop:
                zf.writestr(f"hiv/{rel}", blob)
    return pins


@pytest.fixture
def mols():
    return make_molecules()


@pytest.fixture
def hiv(tmp_path, mols):
    """(raw folder holding hiv.zip, the pins of its members)."""
    folder = tmp_path / "raw"
    folder.mkdir()
    return folder, write_hiv_zip(folder / ARCHIVE, mols)


@pytest.fixture
def prepared(hiv, tmp_path, kit, load_prepare):
    raw_dir, pins = hiv
    prep = load_prepare(TASK)
    prep.MEMBERS = pins  # the archive itself stays unpinned, as for the real one
    return kit.prepare(prep, tmp_path / "data" / TASK, from_dir=raw_dir)


# --------------------------------------------------------------------------- AUROC
def test_auroc_by_hand_with_ties(load_prepare):
    auroc = load_prepare(TASK).auroc
    # positives score 0.35, 0.8, 0.4; negatives 0.1, 0.4, 0.4. Pairs won: 0.35 beats 0.1 (1);
    # 0.8 beats all (3); 0.4 beats 0.1 and ties twice (1 + ½ + ½). 6 of 9 pairs.
    assert auroc([0, 0, 1, 1, 0, 1], [0.1, 0.4, 0.35, 0.8, 0.4, 0.4]) == pytest.approx(6 / 9)
    assert auroc([1, 0, 1, 0], [3.0, 3.0, 3.0, 3.0]) == 0.5
    assert auroc([0, 0, 1], [-2.0, 5.0, 7.0]) == 1.0
    assert auroc([1, 1, 0], [-2.0, 5.0, 7.0]) == 0.0
    with pytest.raises(ValueError, match="positive and one negative"):
        auroc([1, 1], [0.2, 0.3])


def test_auroc_equals_pair_counting(load_prepare):
    auroc = load_prepare(TASK).auroc
    rng = np.random.default_rng(3)
    for _ in range(20):
        y = rng.integers(0, 2, 50)
        y[:2] = (0, 1)
        s = rng.integers(0, 6, 50).astype(np.float32)  # many ties
        pos, neg = s[y == 1], s[y == 0]
        pairs = [(p > n) + 0.5 * (p == n) for p, n in itertools.product(pos, neg)]
        assert auroc(y, s) == pytest.approx(float(np.mean(pairs)), abs=1e-12)


# --------------------------------------------------------------------------- preparation
def test_prepared_arrays_follow_the_raw_files(prepared, mols):
    manifest = json.loads((prepared / "manifest.json").read_text())["files"]
    assert {f for f, info in manifest.items() if info["private"]} == {"test_y.npy"}
    node_ptr, edge_ptr = np.load(prepared / "node_ptr.npy"), np.load(prepared / "edge_ptr.npy")
    edges, edge_feat = np.load(prepared / "edges.npy"), np.load(prepared / "edge_feat.npy")
    node_feat = np.load(prepared / "node_feat.npy")
    assert node_feat.dtype == np.uint8 and edges.dtype == np.int32 and edge_feat.dtype == np.uint8
    assert np.array_equal(node_feat, mols["node_feat"]) and np.array_equal(np.diff(node_ptr), mols["n_nodes"])
    for g, bonds in enumerate(mols["bonds"]):
        mine = edges[edge_ptr[g] : edge_ptr[g + 1]]
        assert np.array_equal(mine[0::2], bonds) and np.array_equal(mine[1::2], bonds[:, ::-1])  # both directions
    assert np.array_equal(edge_feat[0::2], mols["bond_feat"]) and np.array_equal(edge_feat[1::2], mols["bond_feat"])
    for ours, ogb in (("train", "train"), ("val", "valid"), ("test", "test")):
        idx = np.load(prepared / f"{ours}_idx.npy")
        assert np.array_equal(idx, mols["split"][ogb])
        assert np.array_equal(np.load(prepared / f"{ours}_y.npy"), mols["labels"][idx])


def test_collate_graphs_offsets_atom_ids(prepared, mols, load_prepare):
    import torch

    prep = load_prepare(TASK, prepared)
    graphs = prep.load_graphs()
    pick = [5, 3, 0, 17]  # 3 has no bonds
    batch = prep.collate_graphs(graphs, pick)
    assert batch.num_graphs == 4 and batch.x.dtype == batch.edge_index.dtype == batch.batch.dtype == torch.int64
    start = 0
    for b, g in enumerate(pick):
        n = mols["n_nodes"][g]
        atoms = np.flatnonzero(batch.batch.numpy() == b)
        assert np.array_equal(atoms, np.arange(start, start + n))
        first = mols["n_nodes"][:g].sum()
        assert np.array_equal(batch.x.numpy()[atoms], mols["node_feat"][first : first + n])
        mine = batch.edge_index.numpy().T
        own = mine[(mine[:, 0] >= start) & (mine[:, 0] < start + n)] - start
        want = np.concatenate([mols["bonds"][g], mols["bonds"][g][:, ::-1]])
        assert sorted(map(tuple, own)) == sorted(map(tuple, want))
        start += n
    assert batch.edge_index.shape[1] == 2 * sum(len(mols["bonds"][g]) for g in pick) == len(batch.edge_attr)
    assert start == len(batch.x)


@pytest.mark.parametrize("damage", ["member", "missing", "truncated"])
def test_damaged_archive_fails_with_one_clear_line(damage, hiv, mols, tmp_path, kit, load_prepare, monkeypatch, capsys):
    _, pins = hiv
    bad = tmp_path / "bad"
    bad.mkdir()
    if damage == "member":
        write_hiv_zip(bad / ARCHIVE, mols, tamper="raw/edge-feat.csv.gz")
        expect = "hiv/raw/edge-feat.csv.gz in hiv.zip fails its sha256 check"
    elif damage == "missing":
        write_hiv_zip(bad / ARCHIVE, mols, drop="split/scaffold/test.csv.gz")
        expect = "has no member hiv/split/scaffold/test.csv.gz"
    else:
        blob = (hiv[0] / ARCHIVE).read_bytes()
        (bad / ARCHIVE).write_bytes(blob[: len(blob) // 2])
        expect = "is not a readable zip"
    prep = load_prepare(TASK)
    prep.MEMBERS = pins
    out = tmp_path / "data" / TASK
    monkeypatch.setenv("ONEGC_DATA_DIR", str(out))  # the cli sets it; restore after
    monkeypatch.setitem(sys.modules, "prepare", prep)
    assert kit.cli(prep, ["--from", str(bad), "--data-dir", str(out)]) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("step: ")]  # progress
    assert len(err) == 1 and expect in err[0] and "fetch it again" in err[0]
    assert not out.exists() and not (tmp_path / "data" / f".{TASK}.partial").exists()
    assert not (tmp_path / "data" / "_downloads" / TASK / ARCHIVE).exists()  # not reused next time


# --------------------------------------------------------------------------- end to end
@pytest.mark.slow
def test_train_checkpoint_and_score(prepared, make_workspace, save_state, load_prepare, monkeypatch, eval_here, score_both,
                                    sealed_score):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # 2 threads on 2 shared cores spin: up to 50x slower
    ws = make_workspace(TASK, prepared)
    assert not (ws.path / "data" / "test_y.npy").exists() and (ws.path / "data" / "test_idx.npy").exists()
    ws.set_constants(MAX_STEPS=3, EPOCHS=2, BATCH_SIZE=8, HIDDEN=32, DEVICE="cpu")
    out = ws.run()
    assert "best_val_auroc:" in out.stdout
    ckpt = ws.checkpoints()[0]
    result = ws.evaluate(ckpt)  # the pristine prepare.py in a subprocess, as the scorer runs it
    assert result["ok"] and result["split"] == "test" and result["n"] == 6
    assert 0.0 <= result["value"] <= 1.0

    prep = load_prepare(TASK)
    rc, again = eval_here(prep, ckpt, ws.path, prepared)
    assert rc == 0 and again["value"] == result["value"]  # deterministic on CPU
    old, new = score_both(prep, OLD_EVALUATE, ckpt, ws.path, prepared)
    assert abs(old["value"] - new["value"]) <= 1e-6 and old["n"] == new["n"] == 6
    assert result["value"] == pytest.approx(new["value"], abs=1e-6)
    sealed = sealed_score(TASK, prepared, ckpt, ws.path)  # a sandboxed worker predicts, the runner judges
    assert sealed.error is None and not sealed.verdicts and sealed.value == pytest.approx(new["value"], abs=1e-6), sealed
    old, new = score_both(prep, OLD_EVALUATE, ckpt, ws.path, prepared, split="val")
    assert abs(old["value"] - new["value"]) <= 1e-6
    rc, held_out = eval_here(prep, ckpt, ws.path, ws.path / "data")
    assert rc == 1 and not held_out["ok"] and "test labels are held out" in held_out["error"]

    import torch

    payload = torch.load(ckpt, weights_only=True)
    compiled = {f"_orig_mod.{k}": v for k, v in payload["state_dict"].items()}
    bad = save_state(ws.path / "checkpoints" / "compiled.pt", compiled, payload["config"])
    rc, failed = eval_here(prep, bad, ws.path, prepared)
    assert rc == 1 and not failed["ok"] and "'_orig_mod.'" in failed["error"]


def test_inputs_hold_no_label(prepared, mols, make_workspace, load_prepare):
    import torch

    ws = make_workspace(TASK, prepared)  # its data/ has no test labels: inputs() needs none
    prep = load_prepare(TASK, ws.path / "data")
    given = prep.inputs("test")
    assert sorted(given) == sorted([*GRAPH_FILES, "idx"])
    assert np.array_equal(given["idx"], mols["split"]["test"])
    for name in GRAPH_FILES:
        assert np.array_equal(given[name], np.load(prepared / f"{name}.npy"))
        assert given[name].shape[0] != len(given["idx"])  # per atom, bond or graph: never per test graph

    class Size(torch.nn.Module):  # score = atoms in the graph: sees what predict feeds
        def forward(self, batch):
            return torch.bincount(batch.batch, minlength=batch.num_graphs).float()[:, None]

    scores = prep.predict(Size(), given, "cpu")
    assert scores.dtype == np.float32 and np.array_equal(scores, mols["n_nodes"][mols["split"]["test"]])
    with pytest.raises(prep.kit.KitError, match="test labels are held out"):
        prep.judge(scores, "test")


def test_judge_ranks_finite_scores_and_refuses_the_rest(prepared, mols, load_prepare, rejects, hostile):
    prep = load_prepare(TASK, prepared)
    y = mols["labels"][mols["split"]["test"]].astype(np.float32)
    for name, bad in hostile(np.zeros(6, np.float32)).items():
        message = rejects(prep.judge, bad, "test")
        assert ("NaN or inf" if name in ("NaN", "inf") else "score per graph") in message, name
    # rank-based: no value does better than the right order, which a model can give
    assert prep.judge(y, "test") == {"value": 1.0, "n": 6}
    assert prep.judge(np.float64(1e300) * (2 * y - 1), "test")["value"] == 1.0
    assert prep.judge(-y.astype(np.float16), "test")["value"] == 0.0
    assert prep.judge(np.zeros(6, np.float32), "test")["value"] == 0.5


# --------------------------------------------------------------------------- real data
def test_molecule_counts_match_the_hiv_csv(shared_data, load_prepare):
    """HIV.csv (MoleculeNet, same molecules as ogbg-molhiv) backs the counts program.md states."""
    with open(shared_data / "ogbg_molhiv" / "HIV.csv", newline="") as f:
        labels = [int(row["HIV_active"]) for row in csv.DictReader(f)]
    assert (len(labels), sum(labels)) == (41127, 1443)
    prep = load_prepare(TASK)
    program = (prep.Path(prep.__file__).parent / "program.md").read_text()
    for figure in ("41 127", "1 443", "32 901", "4 113", "0.706"):
        assert figure in program


def test_real_archive_if_present(shared_data, tmp_path, kit, load_prepare):
    raw = shared_data / "ogbg_molhiv" / ARCHIVE
    if not raw.is_file():
        pytest.skip(f"{raw} absent: no offline copy of OGB's archive exists (shared/data/README.md §2.5)")
    out = kit.prepare(load_prepare(TASK), tmp_path / "data" / TASK, from_dir=raw.parent)
    sizes = [len(np.load(out / f"{s}_idx.npy")) for s in ("train", "val", "test")]
    assert sizes == [32901, 4113, 4113] and len(np.load(out / "node_ptr.npy")) == 41128
    assert sum(int(np.load(out / f"{s}_y.npy").sum()) for s in ("train", "val", "test")) == 1443


# --------------------------------------------------------------------------- a session
FEW_STEPS_AGENT = """
import re, subprocess, sys
from pathlib import Path
text = Path("train.py").read_text()
for name, value in (("MAX_STEPS", "3"), ("EPOCHS", "1"), ("BATCH_SIZE", "8"), ("HIDDEN", "32"), ("DEVICE", '"cpu"')):
    text = re.sub(rf"^{name}\\s*=.*$", f"{name} = {value}", text, count=1, flags=re.M)
Path("run_1.py").write_text(text)
subprocess.run([sys.executable, "run_1.py"], check=True)
"""


@pytest.mark.slow
def test_a_command_session_on_t4_scores_its_checkpoint_as_prepare_eval_does(prepared, home, tmp_path):
    """A real runner and its sealed scorer on T4: the live (val) and the official (test) score of
    the session's checkpoint are what ``prepare.py --eval`` gives."""
    import shutil
    import subprocess

    from tasks import get_task
    from tests.helpers import events, start_session, wait_event, write_agent

    shutil.copytree(prepared, home / "data" / TASK)
    cmd = write_agent(tmp_path, "few_steps_agent.py", FEW_STEPS_AGENT)
    paths = start_session(home, "t4sealed", task="t4", agent="command", command=cmd, budget_s=240)
    ended = wait_event(paths, "session_ended", timeout=400)
    assert ended["reason"] == "completed", ended
    scored = [e for e in events(paths) if e["type"] == "checkpoint_scored"]
    live = [e for e in scored if not e.get("official")]
    official = [e for e in scored if e.get("official")]
    assert len(live) == len(official) == 1 and live[0]["name"] == official[0]["name"], scored
    assert live[0].get("error") is None and official[0].get("error") is None, scored

    def by_hand(split: str) -> float:
        (ckpt,) = (paths.workspace / "checkpoints").glob("*.pt")
        proc = subprocess.run([sys.executable, str(get_task(TASK).folder / "prepare.py"), "--eval", str(ckpt), "--code",
                               str(paths.workspace), "--data-dir", str(home / "data" / TASK), "--device", "cpu",
                               "--split", split], capture_output=True, text=True, timeout=300)
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        assert out["ok"], out
        return out["value"]

    assert live[0]["split"] == "val" and live[0]["value"] == pytest.approx(by_hand("val"), abs=1e-6)
    assert official[0]["split"] == "test" and official[0]["value"] == pytest.approx(by_hand("test"), abs=1e-6)
    assert json.loads(paths.result.read_text())["value"] == official[0]["value"]
