"""T4: ogbg-molhiv — predict whether a molecule inhibits HIV replication. LOCKED — do not edit.

Raw data: OGB's own archive ``hiv.zip`` (ogb 1.3.6, dataset ogbg-molhiv, version 1): 41 127
molecules as graphs whose integer atom and bond features follow OGB's ``smiles2graph`` (OGB ran
RDKit; nothing here needs it), 1 443 of them active, and OGB's scaffold split (Bemis–Murcko
scaffolds, sorted by group size): train 32 901, val 4 113 (OGB's "valid"), test 4 113 (the
held-out, scored split). Prepared once by ``python prepare.py [--from DIR]`` into ``data/``.
Or, offline, from MoleculeNet's ``HIV.csv`` (the molecules OGB started from) in DIR: the graphs
and the split are rebuilt with RDKit (``smiles_graphs.py``; ``pip install 'onegc[molecules]'``),
and the split, label and count files must equal OGB's byte for byte. The atom and bond features
can differ from the archive's on a few hundred of the 1 049 163 atoms (program.md says how many).

Graphs (all of them, the test molecules' structure included; only test labels are held out):
    load_graphs() -> dict of numpy arrays
        "node_feat": uint8 [N, 9]  per atom; column j takes values 0..ATOM_FEATURE_DIMS[j]-1
                     (atomic number, chirality, degree, formal charge, #H, #radical electrons,
                     hybridisation, is aromatic, is in ring)
        "edges":     int32 [E, 2]  (source, target) atom ids local to their graph. OGB stores
                     each bond once; here every bond is two directed edges, i then its reverse
                     i+1 (what OGB's own loader does for molhiv: add_inverse_edge)
        "edge_feat": uint8 [E, 3]  per directed edge; column j in 0..BOND_FEATURE_DIMS[j]-1
                     (bond type, stereo, is conjugated)
        "node_ptr":  int64 [G+1]   graph g owns atoms node_ptr[g]:node_ptr[g+1]
        "edge_ptr":  int64 [G+1]   and edges edge_ptr[g]:edge_ptr[g+1]
    load_split(split) -> (idx, y): numpy int64 [n] graph ids, float32 [n] labels (1.0 = active)
        splits "train", "val"; split_index("test") gives the test ids, whose labels are held out
    collate_graphs(graphs, idx) -> GraphBatch, one batch of graphs as torch tensors:
        x [n, 9] int64, edge_index [2, e] int64 (atom ids offset into the batch),
        edge_attr [e, 3] int64, batch [n] int64 (graph of each atom, 0..B-1), num_graphs B;
        batch.to(device) moves it
    auroc(y, scores) -> float: ROC AUC, rank-based with ties averaged (judge uses it)

Metric: ROC AUC on the test split (higher is better), given in one call by ``evaluate(model,
split, device)`` (score yourself on "val"). It is ``judge(predict(model, inputs(split), device),
split)``, and the harness runs the parts apart (``predict`` in a sandbox that holds no label,
``judge`` where none of your code runs):
    inputs(split)  -> the five arrays of ``load_graphs()`` (memory-mapped) and "idx": int64 [n],
                      the split's graph ids
    predict(model, inputs, device) -> float32 [n]: ``model(collate_graphs(graphs, idx).to(device))``
                      on the split's graphs in order, EVAL_BATCH at a time; the model returns one
                      score per graph (a logit: shape [B] or [B, 1])
    judge(predictions, split) -> {"value": auroc, "n": n}: the exact shape, finite floats; only
                      the ranking of the scores matters

Checkpoints (rule 7): your run script defines ``build_model(config)`` and saves with
    import prepare
    prepare.save_checkpoint(model, config, "run1_epoch3", score=val_auroc)
which writes ``checkpoints/run1_epoch3.pt``. The harness rebuilds the model with
``build_model(config)`` and loads the weights strictly (save the uncompiled module).
"""

import gzip
import hashlib
import io
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
import numpy as np  # noqa: E402
import onegc_kit as kit  # noqa: E402  (beside this file in a workspace, in tasks/ in the repo)

TASK = "t4_molhiv"
VERSION = "1"
METRIC = "test_auroc"
SCORED_SPLIT = "test"
ARCHIVE = "hiv.zip"
# OGB pins no checksum for its zips (ogb/graphproppred/master.csv has only the URL), and a zip's
# bytes also depend on how it was packed (timestamps, order). So the archive gets none; instead
# every member used is checked below, after extraction, against sizes and sha256 recorded from a
# public copy of the v1 release (Git LFS pointers in Sc1xya/knowledge-ex2 @ 1fce6a9c; see
# shared/data/README.md §2.5).
RAW = {ARCHIVE: {"url": "http://snap.stanford.edu/ogb/data/graphproppred/csv_mol_download/hiv.zip"}}
MEMBERS = {  # path under hiv/ in the archive -> pinned size and sha256 (mapping/: checked, unused)
    "mapping/mol.csv.gz": {"size": 404655, "sha256": "306c4ad8d54fc6cd40c71da4d0561fdcc73e1188662e6992bae0dda8f65bf6d0"},
    "split/scaffold/train.csv.gz": {"size": 73605, "sha256": "9f1e46e77897b3de3d19452cbd47c312e2844a0ec664c1c9dc897c10d12e42f0"},
    "split/scaffold/valid.csv.gz": {"size": 9254, "sha256": "eaf4d6b4630f9e689d2b203669674d0dc309673319e8ac32daa9e9ca90e2e1fa"},
    "split/scaffold/test.csv.gz": {"size": 9503, "sha256": "27485729d83edd6f47eb3b8daff69fdb32c9df6b36b17204ef87f8dc1a30eab1"},
    "raw/edge.csv.gz": {"size": 604150, "sha256": "d279b2d408f553cdc6e8ff9712e8eb52ee8831e6f63d29431812e27bca119389"},
    "raw/edge-feat.csv.gz": {"size": 268628, "sha256": "a59f5bcf890de811555f5d3819a96f713b4f8b6204801f286991c197afacf836"},
    "raw/node-feat.csv.gz": {"size": 616919, "sha256": "1e875d13c6442622d2b4f3763e7b0ef48cf2c769828b087ef0efe91c3bdb574b"},
    "raw/graph-label.csv.gz": {"size": 1727, "sha256": "88f950d08c606556cca1c1ffef05229f46d64043ad7fa617e8938a3ae9779993"},
    "raw/num-node-list.csv.gz": {"size": 35542, "sha256": "e26f7e29de4a3985c7f47482838c62f870c90c4d01871c57bfeae1b8d993a24b"},
    "raw/num-edge-list.csv.gz": {"size": 36509, "sha256": "fa058f23514328fd69bc9c4c31fd8f5938c4ce18726855489d0c0e2dfeaddd37"},
}
# The write time in the gzip header of each member OGB wrote (pandas' gzip records it): with it, the
# files rebuilt from HIV.csv are byte for byte OGB's, so the pins above check them too. Found by
# searching the seconds of 2019 for the one whose bytes hash to the pin: 2019-12-17 01:49:19 UTC for
# the raw files, 21 s later for the split.
OGB_MTIMES = {
    "raw/graph-label.csv.gz": 1576547359,
    "raw/num-node-list.csv.gz": 1576547359,
    "raw/num-edge-list.csv.gz": 1576547359,
    "split/scaffold/train.csv.gz": 1576547380,
    "split/scaffold/valid.csv.gz": 1576547380,
    "split/scaffold/test.csv.gz": 1576547380,
}
CSV_NAME = "HIV.csv"  # MoleculeNet's molecules: the alternative to the archive (smiles_graphs.py)
SPLITS = {"train": "train", "val": "valid", "test": "test"}  # ours -> OGB's file name
# Value counts per atom feature. Recent ogb releases list a fifth chirality value ('misc'), so their
# get_atom_feature_dims() is [119, 5, 12, ...]; ogbg-molhiv's released features use four (build()
# checks every feature against these sizes), so an embedding of 4 chirality rows covers them.
ATOM_FEATURE_DIMS = [119, 4, 12, 12, 10, 6, 6, 2, 2]
BOND_FEATURE_DIMS = [5, 6, 2]  # ogb.utils.features.get_bond_feature_dims()
GRAPH_FILES = ("node_feat", "edges", "edge_feat", "node_ptr", "edge_ptr")
EVAL_BATCH = 1024
save_checkpoint = kit.save_checkpoint
data_dir = kit.data_dir


# --------------------------------------------------------------------------- preparation
def _open_members(path: Path) -> dict[str, bytes]:
    """Every pinned member of the archive, read and checked; the cached archive goes if any fails."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            found = {}
            for rel, pin in MEMBERS.items():
                hits = sorted((n for n in names if n == rel or n.endswith("/" + rel)), key=len)
                if not hits:
                    raise kit.KitError(f"{path.name} has no member hiv/{rel}: not OGB's ogbg-molhiv archive; fetch it again")
                data = zf.read(hits[0])
                sha = hashlib.sha256(data).hexdigest()
                if len(data) != pin["size"] or sha != pin["sha256"]:
                    raise kit.KitError(
                        f"{hits[0]} in {path.name} fails its sha256 check (got {sha[:12]}… of {len(data)} bytes, "
                        f"expected {pin['sha256'][:12]}… of {pin['size']}): the archive is corrupt or not OGB's "
                        "v1 release; fetch it again"
                    )
                found[rel] = data
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as exc:
        path.unlink(missing_ok=True)
        raise kit.KitError(
            f"{path.name} is not a readable zip ({exc}): the download is truncated or corrupt; fetch it again"
        ) from None
    except kit.KitError:
        path.unlink(missing_ok=True)  # the kit keeps unchecked archives: drop this one so it is fetched anew
        raise
    return found


def _table(data: bytes, rel: str, cols: int) -> np.ndarray:
    """A headerless gzipped CSV of integers as int64 [rows, cols]."""
    try:
        table = np.loadtxt(io.BytesIO(gzip.decompress(data)), delimiter=",", dtype=np.int64, ndmin=2)
    except (OSError, EOFError, ValueError) as exc:
        raise kit.KitError(f"{rel} cannot be parsed ({type(exc).__name__}: {exc}): not OGB's format") from None
    if len(table) and table.shape[1] != cols:
        raise kit.KitError(f"{rel} has {table.shape[1]} columns, expected {cols}: not OGB's format")
    return table.reshape(-1, cols)


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise kit.KitError(f"{what}: the raw files are not OGB's ogbg-molhiv")


def _in_range(feat: np.ndarray, dims: list[int]) -> bool:
    return bool((feat >= 0).all() and (feat < np.array(dims)).all())


def _from_archive(members: dict[str, bytes]) -> "smiles_graphs.Molecules":  # noqa: F821
    """OGB's raw tables read from the archive's checked members."""
    from smiles_graphs import Molecules

    return Molecules(
        n_nodes=_table(members["raw/num-node-list.csv.gz"], "num-node-list", 1)[:, 0],
        n_edges=_table(members["raw/num-edge-list.csv.gz"], "num-edge-list", 1)[:, 0],
        labels=_table(members["raw/graph-label.csv.gz"], "graph-label", 1)[:, 0],
        node_feat=_table(members["raw/node-feat.csv.gz"], "node-feat", len(ATOM_FEATURE_DIMS)),
        bonds=_table(members["raw/edge.csv.gz"], "edge", 2),
        bond_feat=_table(members["raw/edge-feat.csv.gz"], "edge-feat", len(BOND_FEATURE_DIMS)),
        split={name: _table(members[f"split/scaffold/{name}.csv.gz"], f"split/scaffold/{name}", 1)[:, 0]
               for name in SPLITS.values()},
    )


def _from_csv(path: Path) -> "smiles_graphs.Molecules":  # noqa: F821
    """The graphs and split rebuilt from HIV.csv with RDKit; its split, label and count files,
    gzipped as OGB wrote them, must match the pins of OGB's members byte for byte."""
    import smiles_graphs as sg

    try:
        mols = sg.molecules_from_csv(path)
    except sg.SmilesError as exc:
        raise kit.KitError(str(exc)) from None
    columns = {
        "raw/graph-label.csv.gz": mols.labels,
        "raw/num-node-list.csv.gz": mols.n_nodes,
        "raw/num-edge-list.csv.gz": mols.n_edges,
        **{f"split/scaffold/{name}.csv.gz": ids for name, ids in mols.split.items()},
    }
    for rel, column in columns.items():
        data = sg.ogb_gzip(column, Path(rel).name.removesuffix(".gz"), OGB_MTIMES[rel])
        if hashlib.sha256(data).hexdigest() != MEMBERS[rel]["sha256"]:
            raise kit.KitError(
                f"{path.name} gives a {rel} unlike OGB's (sha256 pin): not MoleculeNet's HIV.csv, or an RDKit other "
                f"than {sg.RDKIT_VERSION} ({sg.INSTALL_HINT}); or give --from a folder holding OGB's {ARCHIVE}"
            )
    return mols


def fetch_raw(cache: Path, from_dir: Path | None) -> dict[str, Path]:
    """OGB's archive, or MoleculeNet's HIV.csv when ``from_dir`` holds that and no archive."""
    if from_dir is not None and kit.find_local(ARCHIVE, from_dir) is None:
        csv_path = kit.find_local(CSV_NAME, from_dir)
        if csv_path is None:
            raise kit.KitError(
                f"neither {ARCHIVE} (OGB's archive) nor {CSV_NAME} (MoleculeNet's molecules) is under {from_dir}: "
                "put one there, or drop --from to download the archive"
            )
        return {CSV_NAME: csv_path}
    return {name: kit.fetch(name, spec, cache, from_dir) for name, spec in RAW.items()}


def build(raw: dict, out: Path) -> dict:
    mols = _from_csv(raw[CSV_NAME]) if CSV_NAME in raw else _from_archive(_open_members(raw[ARCHIVE]))
    n_nodes, n_edges, labels = mols.n_nodes, mols.n_edges, mols.labels
    node_feat, bonds, bond_feat = mols.node_feat, mols.bonds, mols.bond_feat
    g = len(n_nodes)
    _check(len(n_edges) == g == len(labels), "per-graph lists differ in length")
    _check(int(n_nodes.sum()) == len(node_feat) and int(n_edges.sum()) == len(bonds) == len(bond_feat), "counts do not add up")
    _check(np.isin(labels, (0, 1)).all(), "labels are not 0/1")
    _check(_in_range(node_feat, ATOM_FEATURE_DIMS) and _in_range(bond_feat, BOND_FEATURE_DIMS), "features out of range")
    _check(bool((bonds >= 0).all() and (bonds < np.repeat(n_nodes, n_edges)[:, None]).all()), "bond atom ids out of range")

    edges = np.empty((2 * len(bonds), 2), dtype=np.int32)
    edges[0::2], edges[1::2] = bonds, bonds[:, ::-1]
    arrays = {
        "node_feat": node_feat.astype(np.uint8),
        "edges": edges,
        "edge_feat": np.repeat(bond_feat, 2, axis=0).astype(np.uint8),
        "node_ptr": np.concatenate([[0], np.cumsum(n_nodes)]).astype(np.int64),
        "edge_ptr": np.concatenate([[0], 2 * np.cumsum(n_edges)]).astype(np.int64),
    }
    files = {}
    for name, arr in arrays.items():
        np.save(out / f"{name}.npy", arr)
        files[f"{name}.npy"] = {"split": "all"}
    seen = np.zeros(g, dtype=bool)
    for split, ogb_name in SPLITS.items():
        idx = mols.split[ogb_name]
        _check(bool(((idx >= 0) & (idx < g)).all()) and not seen[idx].any(), f"split {ogb_name} is out of range or overlaps")
        seen[idx] = True
        np.save(out / f"{split}_idx.npy", idx)
        np.save(out / f"{split}_y.npy", labels[idx].astype(np.uint8))
        files[f"{split}_idx.npy"] = {"split": split}
        files[f"{split}_y.npy"] = {"split": split, "private": split == SCORED_SPLIT}
    return files


# --------------------------------------------------------------------------- loading
def load_graphs(mmap: bool = False) -> dict[str, np.ndarray]:
    root = data_dir()
    return {n: np.load(kit.require(root / f"{n}.npy"), mmap_mode="r" if mmap else None) for n in GRAPH_FILES}


def _split_file(split: str, part: str) -> Path:
    if split not in SPLITS:
        raise kit.KitError(f"unknown split {split!r}: choose train, val or test")
    path = data_dir() / f"{split}_{part}.npy"
    if part == "y" and split == SCORED_SPLIT and not path.exists():
        raise kit.KitError("the test labels are held out: the test split is scored after the session; use val")
    return kit.require(path)


def split_index(split: str) -> np.ndarray:
    return np.load(_split_file(split, "idx"))


def load_split(split: str) -> tuple[np.ndarray, np.ndarray]:
    return split_index(split), np.load(_split_file(split, "y")).astype(np.float32)


@dataclass
class GraphBatch:
    """A batch of B graphs as one disconnected graph (atom ids offset per graph)."""

    x: "torch.Tensor"  # noqa: F821  [n, 9] int64 atom features
    edge_index: "torch.Tensor"  # noqa: F821  [2, e] int64 (source, target) rows
    edge_attr: "torch.Tensor"  # noqa: F821  [e, 3] int64 bond features
    batch: "torch.Tensor"  # noqa: F821  [n] int64 graph of each atom
    num_graphs: int

    def to(self, device, non_blocking: bool = False) -> "GraphBatch":
        move = lambda t: t.to(device, non_blocking=non_blocking)  # noqa: E731
        return GraphBatch(move(self.x), move(self.edge_index), move(self.edge_attr), move(self.batch), self.num_graphs)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of arange(s, s + l) over the pairs, without a Python loop."""
    before = np.cumsum(lengths) - lengths
    return np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(starts - before, lengths)


def collate_graphs(graphs: dict, idx) -> GraphBatch:
    """Batch the graphs ``idx`` (ids into ``graphs``), offsetting each graph's atom ids."""
    import torch

    idx = np.asarray(idx, dtype=np.int64)
    node_ptr, edge_ptr = np.asarray(graphs["node_ptr"]), np.asarray(graphs["edge_ptr"])
    n = node_ptr[idx + 1] - node_ptr[idx]
    e = edge_ptr[idx + 1] - edge_ptr[idx]
    nodes, edges = _ranges(node_ptr[idx], n), _ranges(edge_ptr[idx], e)
    edge_index = graphs["edges"][edges].astype(np.int64) + np.repeat(np.cumsum(n) - n, e)[:, None]
    return GraphBatch(
        x=torch.from_numpy(graphs["node_feat"][nodes].astype(np.int64)),
        edge_index=torch.from_numpy(np.ascontiguousarray(edge_index.T)),
        edge_attr=torch.from_numpy(graphs["edge_feat"][edges].astype(np.int64)),
        batch=torch.from_numpy(np.repeat(np.arange(len(idx), dtype=np.int64), n)),
        num_graphs=len(idx),
    )


# --------------------------------------------------------------------------- metric
def auroc(y_true, scores) -> float:
    """Area under the ROC curve: P(score of a positive > score of a negative), ties counting ½."""
    y = np.asarray(y_true).reshape(-1) > 0.5
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if len(s) != len(y):
        raise ValueError(f"{len(s)} scores for {len(y)} labels")
    pos, neg = int(y.sum()), int((~y).sum())
    if pos == 0 or neg == 0:
        raise ValueError("AUROC needs at least one positive and one negative label")
    order = np.argsort(s, kind="mergesort")
    ordered = s[order]
    first = np.r_[True, ordered[1:] != ordered[:-1]]  # where each group of tied scores starts
    starts = np.flatnonzero(first)
    ends = np.r_[starts[1:], len(s)]
    ranks = np.empty(len(s))
    ranks[order] = ((starts + 1 + ends) / 2.0)[np.cumsum(first) - 1]  # 1-based ranks, ties averaged
    return float((ranks[y].sum() - pos * (pos + 1) / 2.0) / (pos * neg))


# --------------------------------------------------------------------------- evaluation
def inputs(split: str) -> dict:
    """What the model is given: the graph arrays of ``load_graphs`` and the split's graph ids
    ("idx", int64 [n]); the molecules' structure only, no label."""
    return {**load_graphs(mmap=True), "idx": np.load(_split_file(split, "idx"), mmap_mode="r")}


def predict(model, inputs: dict, device: str):
    """One score per graph of the split, in order: float32 [n]."""
    import torch

    graphs, idx, out = {name: inputs[name] for name in GRAPH_FILES}, np.asarray(inputs["idx"]), []
    with torch.no_grad():
        for i in range(0, len(idx), EVAL_BATCH):
            batch = collate_graphs(graphs, idx[i : i + EVAL_BATCH]).to(device)
            scores = model(batch)
            if scores.numel() != batch.num_graphs:
                shape = tuple(scores.shape)
                raise kit.KitError(f"the model returned shape {shape} for {batch.num_graphs} graphs: expected [B] or [B, 1]")
            out.append(scores.reshape(-1).float().cpu())
    return torch.cat(out).numpy()


def judge(predictions, split: str) -> dict:
    """ROC AUC of float [n] scores against the split's labels (any finite reals: only their
    order counts)."""
    _, y = load_split(split)
    scores = kit.check_predictions(predictions, y.shape, "f", "one float score per graph")
    return {"value": auroc(y, scores), "n": len(y)}


def evaluate(model, split: str, device: str) -> dict:
    """ROC AUC on ``split`` in one call (what the harness computes in two processes)."""
    return kit.evaluate_split(sys.modules[__name__], model, split, device)


if __name__ == "__main__":
    sys.exit(kit.cli(sys.modules[__name__]))
