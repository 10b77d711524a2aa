"""Baseline for T4 (ogbg-molhiv): a 5-layer GIN with bond features, mean pooling and an MLP head.

Pure PyTorch (message passing with index_add_), after OGB's GIN example, read this way: each of
the 9 atom features has its own embedding table of width ATOM_EMB (64) and the 9 vectors are
summed into one 64-d atom vector; the first GIN layer maps 64 -> HIDDEN (300), the others 300 ->
300. Each layer embeds the bonds the same way, at its input width, and sends
relu(h_source + bond) along every directed edge (OGB's GINConv); its MLP is Linear, BatchNorm,
ReLU, Linear, followed by BatchNorm, ReLU (not after the last layer) and dropout. Mean pooling
over atoms, then a 300 -> 300 -> 1 MLP head gives one logit per molecule. BCE loss, Adam.

Copy me to run_1.py and improve. Prints val AUROC each epoch and saves a checkpoint whenever it
improves.
"""

import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

import prepare

# --- hyper-parameters (edit these) ---
ATOM_EMB = 64  # width of each per-feature atom embedding (summed over the 9 features)
HIDDEN = 300
LAYERS = 5
DROPOUT = 0.5  # OGB's GIN default
LR = 1e-3  # Adam, constant
EPOCHS = 5
BATCH_SIZE = 256
SEED = 0
MAX_STEPS = 0  # 0 = no limit; tests set a few steps
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class FeatureEmbedding(nn.Module):
    """Sum of one embedding per integer feature column: [n, k] int64 -> [n, dim]."""

    def __init__(self, dims: list[int], dim: int):
        super().__init__()
        self.tables = nn.ModuleList(nn.Embedding(d, dim) for d in dims)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        return sum(table(feats[:, j]) for j, table in enumerate(self.tables))


class GINLayer(nn.Module):
    def __init__(self, bond_dims: list[int], d_in: int, d_out: int):
        super().__init__()
        self.bond = FeatureEmbedding(bond_dims, d_in)
        self.eps = nn.Parameter(torch.zeros(1))
        self.mlp = nn.Sequential(nn.Linear(d_in, d_out), nn.BatchNorm1d(d_out), nn.ReLU(), nn.Linear(d_out, d_out))

    def forward(self, h: torch.Tensor, edge_index: torch.Tensor, edge_attr: torch.Tensor) -> torch.Tensor:
        src, dst = edge_index
        messages = torch.relu(h[src] + self.bond(edge_attr))
        agg = torch.zeros_like(h).index_add_(0, dst, messages)
        return self.mlp((1 + self.eps) * h + agg)


class GIN(nn.Module):
    def __init__(self, config: dict):
        super().__init__()
        emb, hidden, layers = config["atom_emb"], config["hidden"], config["layers"]
        self.atoms = FeatureEmbedding(config["atom_dims"], emb)
        self.layers = nn.ModuleList(GINLayer(config["bond_dims"], emb if i == 0 else hidden, hidden) for i in range(layers))
        self.norms = nn.ModuleList(nn.BatchNorm1d(hidden) for _ in range(layers))
        self.dropout = nn.Dropout(config["dropout"])
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(config["dropout"]), nn.Linear(hidden, 1))

    def forward(self, batch: prepare.GraphBatch) -> torch.Tensor:
        h = self.atoms(batch.x)
        for i, (layer, norm) in enumerate(zip(self.layers, self.norms)):
            h = norm(layer(h, batch.edge_index, batch.edge_attr))
            h = self.dropout(h if i == len(self.layers) - 1 else torch.relu(h))
        pooled = torch.zeros(batch.num_graphs, h.shape[1], device=h.device, dtype=h.dtype).index_add_(0, batch.batch, h)
        counts = torch.bincount(batch.batch, minlength=batch.num_graphs).clamp(min=1).unsqueeze(1)
        return self.head(pooled / counts).squeeze(1)


def build_model(config: dict) -> nn.Module:
    return GIN(config)


def val_auroc(model: nn.Module) -> float:
    model.eval()
    with torch.no_grad():
        auc = prepare.evaluate(model, "val", DEVICE)["value"]  # the official evaluator, on val
    model.train()
    return auc


def main() -> None:
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    graphs = prepare.load_graphs()
    idx, y = prepare.load_split("train")
    config = {
        "atom_dims": prepare.ATOM_FEATURE_DIMS, "bond_dims": prepare.BOND_FEATURE_DIMS,
        "atom_emb": ATOM_EMB, "hidden": HIDDEN, "layers": LAYERS, "dropout": DROPOUT,
    }
    model = build_model(config).to(DEVICE)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    run = Path(__file__).stem
    started, steps, best = time.time(), 0, -1.0
    for epoch in range(1, EPOCHS + 1):
        perm = rng.permutation(len(idx))
        for i in range(0, len(idx), BATCH_SIZE):
            rows = perm[i : i + BATCH_SIZE]
            batch = prepare.collate_graphs(graphs, idx[rows]).to(DEVICE, non_blocking=True)
            target = torch.from_numpy(y[rows]).to(DEVICE)
            loss = nn.functional.binary_cross_entropy_with_logits(model(batch), target)
            if not torch.isfinite(loss):
                raise SystemExit(f"loss is {loss.item()} at step {steps}: lower the learning rate")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            steps += 1
            if MAX_STEPS and steps >= MAX_STEPS:
                break
        auc = val_auroc(model)
        elapsed = time.time() - started
        print(f"epoch {epoch}/{EPOCHS} loss {loss.item():.4f} val_auroc {auc:.4f} time {elapsed:.1f}s", flush=True)
        if auc > best:  # keep the checkpoints worth scoring
            best = auc
            prepare.save_checkpoint(model, config, f"{run}_epoch{epoch}", score=auc)
        if MAX_STEPS and steps >= MAX_STEPS:
            break
    print(f"val_auroc: {auc:.4f}\nbest_val_auroc: {best:.4f}\nsteps: {steps}\ntime_s: {time.time() - started:.1f}")


if __name__ == "__main__":
    main()
