"""T4's graphs rebuilt from MoleculeNet's ``HIV.csv``, the file OGB made ogbg-molhiv from.

Used only by ``prepare.py`` at preparation time, and only when the raw folder holds ``HIV.csv``
rather than OGB's ``hiv.zip``; it needs RDKit (``pip install 'onegc[molecules]'``), imported here
and nowhere else. It is not copied into workspaces.

What OGB did, done again:
- the 9 atom and 3 bond features are OGB's ``atom_to_feature_vector`` /
  ``bond_to_feature_vector`` and the graphs its ``smiles2graph`` (snap-stanford/ogb,
  ``ogb/utils/features.py`` and ``ogb/utils/mol.py``, MIT licence), written out below so that
  the task needs no ogb package;
- the split is the Bemis–Murcko scaffold split OGB took from Hu et al.'s pretrain-gnns
  (``splitters.scaffold_split``, adapted there from DeepChem's ``ScaffoldSplitter``): scaffolds
  with chirality, groups sorted by (size, first index) descending, filled into train until 80 %,
  then valid until 90 %, the rest test; each split's ids written sorted;
- the split, label and count files are gzipped CSVs byte for byte as OGB wrote them (pandas'
  gzip: level 9, a sync flush before the end, the file name and OGB's write time in the header),
  so ``prepare.py`` checks them against the sha256 pins of OGB's own members.

The atom and bond features can differ slightly from OGB's archive: RDKit's perception of
aromaticity, hydrogens and stereo bonds changes between releases (tasks/t4_molhiv/program.md
gives the measured size of the difference).
"""

from __future__ import annotations

import csv
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CSV_NAME = "HIV.csv"
INSTALL_HINT = "pip install 'onegc[molecules]' (Python 3.11 or 3.12)"
# RDKit release the pins were reproduced with (pyproject's "molecules" extra pins the same)
RDKIT_VERSION = "2024.03.6"
FRAC_TRAIN, FRAC_VALID = 0.8, 0.1

# ogb/utils/features.py: allowable_features (an unknown value maps to the last entry, 'misc')
ATOMIC_NUMS = [*range(1, 119), "misc"]
CHIRALITY = ["CHI_UNSPECIFIED", "CHI_TETRAHEDRAL_CW", "CHI_TETRAHEDRAL_CCW", "CHI_OTHER", "misc"]
DEGREES = [*range(11), "misc"]
FORMAL_CHARGES = [*range(-5, 6), "misc"]
NUM_HS = [*range(9), "misc"]
RADICAL_ELECTRONS = [*range(5), "misc"]
HYBRIDISATIONS = ["SP", "SP2", "SP3", "SP3D", "SP3D2", "misc"]
BOND_TYPES = ["SINGLE", "DOUBLE", "TRIPLE", "AROMATIC", "misc"]
BOND_STEREO = ["STEREONONE", "STEREOZ", "STEREOE", "STEREOCIS", "STEREOTRANS", "STEREOANY"]


class SmilesError(Exception):
    """HIV.csv or RDKit cannot give OGB's graphs; the message says what to do."""


@dataclass
class Molecules:
    """OGB's raw tables: per-graph counts and labels, atoms and bonds (each bond once, atom ids
    local to their graph), and the scaffold split's sorted ids."""

    n_nodes: np.ndarray  # int64 [G]
    n_edges: np.ndarray  # int64 [G] bonds per graph
    labels: np.ndarray  # int64 [G] 0/1
    node_feat: np.ndarray  # int64 [N, 9]
    bonds: np.ndarray  # int64 [B, 2]
    bond_feat: np.ndarray  # int64 [B, 3]
    split: dict[str, np.ndarray]  # "train" / "valid" / "test" -> int64 ids, ascending


def rdkit_modules():
    """(Chem, MurckoScaffold, version), or a one-line SmilesError saying how to install RDKit."""
    try:
        from rdkit import Chem, RDLogger, rdBase
        from rdkit.Chem.Scaffolds import MurckoScaffold
    except ImportError:
        raise SmilesError(
            f"building T4 from {CSV_NAME} needs RDKit, which is not installed: run {INSTALL_HINT} "
            "(or give --from a folder holding OGB's hiv.zip)"
        ) from None
    RDLogger.DisableLog("rdApp.*")  # one line per odd molecule otherwise
    return Chem, MurckoScaffold, rdBase.rdkitVersion


def _index(values: list, value) -> int:
    """OGB's safe_index: the value's position, or the last ('misc') one."""
    try:
        return values.index(value)
    except ValueError:
        return len(values) - 1


def atom_features(atom) -> tuple[int, ...]:
    """ogb.utils.features.atom_to_feature_vector."""
    return (
        _index(ATOMIC_NUMS, atom.GetAtomicNum()),
        _index(CHIRALITY, str(atom.GetChiralTag())),
        _index(DEGREES, atom.GetTotalDegree()),
        _index(FORMAL_CHARGES, atom.GetFormalCharge()),
        _index(NUM_HS, atom.GetTotalNumHs()),
        _index(RADICAL_ELECTRONS, atom.GetNumRadicalElectrons()),
        _index(HYBRIDISATIONS, str(atom.GetHybridization())),
        int(atom.GetIsAromatic()),
        int(atom.IsInRing()),
    )


def bond_features(bond) -> tuple[int, int, int]:
    """ogb.utils.features.bond_to_feature_vector (an unknown stereo value is an error there too)."""
    return (_index(BOND_TYPES, str(bond.GetBondType())), BOND_STEREO.index(str(bond.GetStereo())),
            int(bond.GetIsConjugated()))


def read_csv(path: Path) -> tuple[list[str], np.ndarray]:
    """SMILES and 0/1 labels of MoleculeNet's HIV.csv (header ``smiles,activity,HIV_active``)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = {"smiles", "HIV_active"} - set(reader.fieldnames or [])
            if missing:
                raise SmilesError(f"{path.name} has no column {', '.join(sorted(missing))}: not MoleculeNet's HIV.csv")
            smiles, labels = [], []
            for row in reader:
                label = (row.get("HIV_active") or "").strip()
                if label not in ("0", "1"):
                    raise SmilesError(f"{path.name} line {reader.line_num}: HIV_active is {label[:20]!r}, not 0 or 1")
                smiles.append((row.get("smiles") or "").strip())
                labels.append(int(label))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise SmilesError(f"{path.name} cannot be read ({type(exc).__name__}: {exc}): not MoleculeNet's HIV.csv") from None
    if not smiles:
        raise SmilesError(f"{path.name} holds no molecule: not MoleculeNet's HIV.csv")
    return smiles, np.array(labels, dtype=np.int64)


def scaffold_split(scaffolds: list[str]) -> dict[str, np.ndarray]:
    """pretrain-gnns' scaffold_split (DeepChem's rule) on the molecules' scaffold SMILES."""
    groups: dict[str, list[int]] = {}
    for i, scaffold in enumerate(scaffolds):
        groups.setdefault(scaffold, []).append(i)
    ordered = sorted(groups.values(), key=lambda ids: (len(ids), ids[0]), reverse=True)
    n = len(scaffolds)
    train: list[int] = []
    valid: list[int] = []
    test: list[int] = []
    for ids in ordered:
        if len(train) + len(ids) > FRAC_TRAIN * n:
            if len(train) + len(valid) + len(ids) > (FRAC_TRAIN + FRAC_VALID) * n:
                test += ids
            else:
                valid += ids
        else:
            train += ids
    return {name: np.array(sorted(ids), dtype=np.int64) for name, ids in (("train", train), ("valid", valid), ("test", test))}


def molecules_from_csv(path: Path) -> Molecules:
    """Every molecule of HIV.csv as OGB's smiles2graph makes it, and the scaffold split."""
    Chem, MurckoScaffold, version = rdkit_modules()
    smiles, labels = read_csv(path)
    atoms: list[tuple[int, ...]] = []
    bonds: list[tuple[int, int]] = []
    bond_feat: list[tuple[int, int, int]] = []
    n_nodes, n_edges, scaffolds, failed = [], [], [], []
    for i, text in enumerate(smiles):
        mol = Chem.MolFromSmiles(text)
        if mol is None:
            failed.append(i)
            continue
        atoms += [atom_features(a) for a in mol.GetAtoms()]
        for bond in mol.GetBonds():
            bonds.append((bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()))
            bond_feat.append(bond_features(bond))
        n_nodes.append(mol.GetNumAtoms())
        n_edges.append(mol.GetNumBonds())
        scaffolds.append(MurckoScaffold.MurckoScaffoldSmiles(mol=mol, includeChirality=True))
    if failed:
        raise SmilesError(
            f"RDKit {version} cannot parse {len(failed)} of the {len(smiles)} molecules in {path.name} (first on line "
            f"{failed[0] + 2}); the pinned RDKit {RDKIT_VERSION} parses them all: run {INSTALL_HINT}"
        )
    return Molecules(
        n_nodes=np.array(n_nodes, dtype=np.int64),
        n_edges=np.array(n_edges, dtype=np.int64),
        labels=labels,
        node_feat=np.array(atoms, dtype=np.int64).reshape(-1, 9),
        bonds=np.array(bonds, dtype=np.int64).reshape(-1, 2),
        bond_feat=np.array(bond_feat, dtype=np.int64).reshape(-1, 3),
        split=scaffold_split(scaffolds),
    )


def ogb_gzip(column: np.ndarray, name: str, mtime: int) -> bytes:
    """One integer per line, gzipped as OGB's pandas wrote it: level 9, header naming the file
    (``name`` without .gz) and its write time, a sync flush before the final block."""
    data = "".join(f"{int(v)}\n" for v in column).encode()
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = deflate.compress(data) + deflate.flush(zlib.Z_SYNC_FLUSH) + deflate.flush()
    header = b"\x1f\x8b\x08\x08" + struct.pack("<I", mtime) + b"\x02\xff" + name.encode() + b"\x00"
    return header + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
