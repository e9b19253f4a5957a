"""A float32 model folder kept once more in a narrower dtype, so that it loads without a peak.

`from_pretrained(folder, dtype=bfloat16)` on a float32 folder maps the whole float32 file and
reads every page of it while it casts: for a 1.5B model that is a 7 GB file in the resident set
on top of the 3.6 GB of bfloat16 weights. A folder whose weights already are bfloat16 is mapped
and used in place (zero copy: its pages are the file's, shared with the page cache). `narrowed`
writes that folder once per (source content, dtype) under `$UDS_HOME/narrowed/`, one tensor at a
time (each read through its own short-lived map, so only one float32 tensor is resident at once),
with the cast `from_pretrained` makes (`Tensor.to`, round to nearest even): the model loaded from
the copy equals the one cast at load time, parameter for parameter. Written to a temporary folder
and renamed, with a digest manifest checked before every use (`uds_core.manifest`).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import torch

from uds_core import manifest
from uds_core.atomic import file_lock, fsync_tree
from uds_core.digests import model_folder_digest
from uds_core.paths import uds_home

COPIED = ("generation_config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
          "special_tokens_map.json", "tokenizer.model", "SOURCE")


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def narrowed(folder: str | Path, dtype: torch.dtype) -> Path:
    """The copy of the float32 model folder `folder` with its floating-point weights in `dtype`
    (`folder` itself when its weights already are `dtype`)."""
    folder = Path(folder)
    if _weights_dtype(folder) == dtype:
        return folder
    target = uds_home() / "narrowed" / f"{model_folder_digest(folder)[:16]}-{dtype_name(dtype)}"
    if _whole(target, quiet=True):
        return target
    with file_lock(target):
        if not _whole(target):
            shutil.rmtree(target, ignore_errors=True)
            _write(folder, target, dtype)
    return target


def _whole(target: Path, quiet: bool = False) -> bool:
    return (target / "config.json").is_file() and manifest.checked(
        target, quiet, lambda problem: f"narrowed copy {target.name}: {problem}; writing it again")


def _weights_dtype(folder: Path) -> torch.dtype | None:
    """The dtype config.json records for the weights (None when it records none)."""
    config = json.loads((folder / "config.json").read_text())
    name = config.get("dtype") or config.get("torch_dtype")
    return getattr(torch, name, None) if isinstance(name, str) else None


def _write(source: Path, target: Path, dtype: torch.dtype) -> None:
    from safetensors import safe_open
    from safetensors.torch import save_file

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    tmp.chmod(0o755)
    try:
        for shard in sorted(source.glob("*.safetensors")):
            with safe_open(str(shard), "pt") as fh:
                names, metadata = list(fh.keys()), fh.metadata()
            state = {}
            for name in names:   # a map per tensor: its float32 pages leave the resident set with it
                with safe_open(str(shard), "pt") as fh:
                    tensor = fh.get_tensor(name)
                state[name] = tensor.to(dtype) if tensor.is_floating_point() else tensor
                del tensor
            save_file(state, str(tmp / shard.name), metadata=metadata)
            del state
        index = source / "model.safetensors.index.json"
        if index.is_file():
            shutil.copyfile(index, tmp / index.name)   # same names and shards: only byte sizes differ
        config = json.loads((source / "config.json").read_text())
        config["dtype"] = dtype_name(dtype)
        if "torch_dtype" in config:
            config["torch_dtype"] = dtype_name(dtype)
        (tmp / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        for name in COPIED:
            if (source / name).is_file():
                shutil.copyfile(source / name, tmp / name)
        (tmp / "NARROWED_FROM").write_text(f"{source}\n{model_folder_digest(source)}\n{dtype_name(dtype)}\n")
        manifest.record(tmp)
        fsync_tree(tmp)
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
