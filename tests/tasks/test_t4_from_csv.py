"""T4 prepared from MoleculeNet's HIV.csv with RDKit: OGB's features (its own worked example),
the scaffold split's rule, OGB's gzip bytes, one-line refusals (a CSV that is not OGB's, a missing
RDKit, a bad label, a folder holding neither raw file); on the real HIV.csv (slow) the split
sizes, positives and the pinned split, label and count files."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rdkit", reason="RDKit is the molecules extra (make venv installs it)")

TASK = "t4_molhiv"
# ogb/utils/features.py's own worked example (the comments under atom_to_feature_vector and
# bond_to_feature_vector): the chiral carbon and the stereo double bond of this molecule
OGB_EXAMPLE = "Cl[C@H](/C=C/C)Br"
OGB_ATOM_1 = (5, 2, 4, 5, 1, 0, 2, 0, 0)
OGB_BOND_2 = (1, 2, 0)
SMALL = ["CCO", "c1ccccc1", "c1ccccc1O", "c1ccccc1N", "C1CCCCC1", "C1CCCCC1C", "c1ccncc1", "O=C(O)c1ccccc1",
         "[Na+].[Cl-]", OGB_EXAMPLE]


@pytest.fixture
def sg(load_prepare):
    load_prepare(TASK)  # puts tasks/t4_molhiv on sys.path, as prepare.py does for itself
    import smiles_graphs

    return smiles_graphs


def write_csv(path, smiles: list[str], labels: list[str] | None = None) -> None:
    labels = labels or [str(i % 2) for i in range(len(smiles))]
    path.write_text("smiles,activity,HIV_active\n" + "".join(f"{s},CI,{y}\n" for s, y in zip(smiles, labels, strict=True)))


def test_atom_and_bond_features_are_ogbs_worked_example(sg):
    Chem, _, _ = sg.rdkit_modules()
    mol = Chem.MolFromSmiles(OGB_EXAMPLE)
    assert sg.atom_features(mol.GetAtomWithIdx(1)) == OGB_ATOM_1
    assert sg.bond_features(mol.GetBondWithIdx(2)) == OGB_BOND_2


def test_small_csv_gives_one_graph_per_molecule(sg, tmp_path):
    write_csv(tmp_path / "HIV.csv", SMALL)
    mols = sg.molecules_from_csv(tmp_path / "HIV.csv")
    assert mols.n_nodes.tolist() == [3, 6, 7, 7, 6, 7, 6, 9, 2, 6]
    assert mols.n_edges.tolist() == [2, 6, 7, 7, 6, 7, 6, 9, 0, 5]  # the salt: two ions, no bond
    assert len(mols.node_feat) == mols.n_nodes.sum() and len(mols.bonds) == len(mols.bond_feat) == mols.n_edges.sum()
    assert mols.node_feat[0].tolist() == [5, 0, 4, 5, 3, 0, 2, 0, 0]  # CH3: carbon, degree 4, 3 H, sp3
    assert mols.node_feat[3 + 0, 7] == 1 and mols.bond_feat[2, 0] == 3  # benzene: aromatic atom, aromatic bond
    ids = np.concatenate(list(mols.split.values()))
    assert sorted(ids.tolist()) == list(range(len(SMALL)))
    assert all((np.diff(v) > 0).all() for v in mols.split.values())  # each split written ascending, as OGB's


def test_scaffold_split_fills_train_with_the_largest_groups_first(sg):
    # 20 molecules: scaffold A x8, B x6, C x2, D..G x1 (ties broken by the first index, later first)
    scaffolds = ["A"] * 8 + ["B"] * 6 + ["C"] * 2 + ["D", "E", "F", "G"]
    split = sg.scaffold_split(scaffolds)
    assert split["train"].tolist() == list(range(16))  # A, B, C: 16 = 80 %
    assert split["valid"].tolist() == [18, 19]  # G (index 19) and F (18) come before E and D
    assert split["test"].tolist() == [16, 17]


def test_ogb_gzip_holds_the_column_with_name_and_time(sg):
    data = sg.ogb_gzip(np.array([3, 1, 2]), "train.csv", 1576547380)
    assert gzip.decompress(data) == b"3\n1\n2\n"
    assert data[3] == 0x08 and int.from_bytes(data[4:8], "little") == 1576547380 and data[10:20] == b"train.csv\x00"


def test_a_csv_that_is_not_ogbs_is_refused_in_one_line(tmp_path, kit, load_prepare):
    write_csv(tmp_path / "HIV.csv", SMALL)
    with pytest.raises(kit.KitError) as err:
        kit.prepare(load_prepare(TASK), tmp_path / "data" / TASK, from_dir=tmp_path)
    assert "unlike OGB's (sha256 pin)" in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "data" / TASK).exists()


def test_bad_label_and_unparsable_molecule_are_refused(sg, tmp_path):
    write_csv(tmp_path / "HIV.csv", ["CCO", "CCN"], ["0", "yes"])
    with pytest.raises(sg.SmilesError, match="line 3: HIV_active is 'yes'"):
        sg.molecules_from_csv(tmp_path / "HIV.csv")
    write_csv(tmp_path / "HIV.csv", ["CCO", "C1CC", "CCN"])
    with pytest.raises(sg.SmilesError, match=r"cannot parse 1 of the 3 molecules .*first on line 3.*onegc\[molecules\]"):
        sg.molecules_from_csv(tmp_path / "HIV.csv")
    (tmp_path / "HIV.csv").write_text("name,label\nx,1\n")
    with pytest.raises(sg.SmilesError, match="no column HIV_active, smiles"):
        sg.molecules_from_csv(tmp_path / "HIV.csv")


def test_missing_rdkit_says_what_to_install(sg, monkeypatch):
    monkeypatch.setitem(sys.modules, "rdkit", None)  # an import of it now fails as if absent
    with pytest.raises(sg.SmilesError, match=r"needs RDKit, which is not installed: run pip install 'onegc\[molecules\]'"):
        sg.rdkit_modules()


def test_a_folder_with_neither_raw_file_is_refused(tmp_path, kit, load_prepare):
    with pytest.raises(kit.KitError, match="neither hiv.zip .* nor HIV.csv .* is under"):
        kit.prepare(load_prepare(TASK), tmp_path / "data" / TASK, from_dir=tmp_path)


def run_prepare(from_dir, data_dir) -> subprocess.CompletedProcess:
    script = Path(__file__).resolve().parents[2] / "tasks" / TASK / "prepare.py"
    cmd = [sys.executable, str(script), "--from", str(from_dir), "--data-dir", str(data_dir)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)  # ~1 min idle; a loaded machine is slower


@pytest.mark.slow
def test_prepare_refuses_a_csv_that_is_not_ogbs_with_exit_2(tmp_path):
    write_csv(tmp_path / "HIV.csv", SMALL)
    proc = run_prepare(tmp_path, tmp_path / "data")
    assert proc.returncode == 2, proc.stderr
    # progress lines ("step: ...") come first; the refusal is one line, the last
    lines = [line for line in proc.stderr.strip().splitlines() if not line.startswith("step: ")]
    assert len(lines) == 1 and lines[0].startswith("error: HIV.csv gives a raw/graph-label.csv.gz unlike OGB's"), lines


@pytest.mark.slow
def test_real_hiv_csv_rebuilds_ogbs_split_and_labels(shared_data, tmp_path):
    """The real HIV.csv through prepare.py's command line: OGB's split sizes and positives, and
    (inside build, else exit 2) its split, label and count files equal to OGB's pins byte for byte."""
    out = tmp_path / "data"
    proc = run_prepare(shared_data / "ogbg_molhiv", out)
    assert proc.returncode == 0, proc.stderr
    sizes = [len(np.load(out / f"{s}_idx.npy")) for s in ("train", "val", "test")]
    positives = [int(np.load(out / f"{s}_y.npy").sum()) for s in ("train", "val", "test")]
    assert sizes == [32901, 4113, 4113] and positives == [1232, 81, 130]
    assert np.load(out / "node_ptr.npy")[-1] == 1049163 and np.load(out / "edge_ptr.npy")[-1] == 2 * 1129688
