"""Loading a model and its tokenizer from where transformers finds them: a local folder or a hub ID.

Exactly the transformers calls a GPU user needs (dtype, device, safetensors only unless pickles
are explicitly trusted), with one clear error for an offline machine. Which folder or hub ID a
checkpoint spec names (tiny world, registry alias) is `checkpoints.specs`' job.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from urllib.parse import urlparse

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from uds_core import manifest
from uds_core.errors import UdsInputError

# transformers renamed `torch_dtype` to `dtype` in 4.56; keep both worlds working.
_DTYPE_KW = "dtype" if tuple(int(x) for x in transformers.__version__.split(".")[:2]) >= (4, 56) else "torch_dtype"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_device(name: str) -> str:
    """"auto" -> "cuda" when a GPU is visible, else "cpu"."""
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise UdsInputError("--device cuda asked for, but no CUDA device is visible")
    if name not in ("cpu", "cuda"):
        raise UdsInputError(f"unknown device {name!r} (choose auto, cpu or cuda)")
    return name


def resolve_dtype(name: str, device: str) -> torch.dtype:
    """"auto" -> bfloat16 on CUDA (as the reference runs), float32 on CPU."""
    if name == "auto":
        return torch.bfloat16 if device == "cuda" else torch.float32
    if name not in DTYPES:
        raise UdsInputError(f"unknown dtype {name!r} (choose auto, {', '.join(DTYPES)})")
    return DTYPES[name]


def _hub_reachable(timeout: float = 3.0) -> bool:
    """A quick TCP probe of the hub endpoint: offline machines fail in seconds, not after
    transformers' minute of retries."""
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return False
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def _from_hub_or_cache(loader, hub_id: str, **kwargs):
    """Load a hub checkpoint from the local HF cache if it is there, else from the hub."""
    try:
        return loader(hub_id, local_files_only=True, **kwargs)
    except (OSError, ValueError):
        pass
    if not _hub_reachable():
        raise _offline_error(hub_id, OSError("hub unreachable"))
    return loader(hub_id, **kwargs)


def _offline_error(hub_id: str, exc: Exception) -> UdsInputError:
    return UdsInputError(
        f"cannot load {hub_id!r} from the Hugging Face hub ({exc}); "
        "on an offline machine download it elsewhere (`huggingface-cli download ID --local-dir DIR`) "
        "and pass the local folder DIR instead")


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")
SHARD_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


def check_folder(folder: Path) -> None:
    """UdsInputError unless `folder` looks like a `save_pretrained` folder whose shards (when the
    weights are sharded) are all there, and whose files, when it carries a digest manifest (a
    folder built by this toolkit, given by its path or copied), match it. A user's folder without
    one is read as given."""
    if not (folder / "config.json").is_file():
        raise UdsInputError(f"{folder} holds no config.json (nor adapter_config.json): not a folder saved with "
                            "save_pretrained, nor a PEFT adapter")
    for name in SHARD_INDEXES:
        index = folder / name
        if index.is_file():
            shards = sorted(set(json.loads(index.read_text()).get("weight_map", {}).values()))
            missing = [s for s in shards if not (folder / s).is_file()]
            if missing:
                raise UdsInputError(f"sharded checkpoint {folder}: {name} names {len(shards)} shards, "
                                    f"{len(missing)} missing ({', '.join(missing[:3])})")
    problem = manifest.verify(folder) if manifest.has_manifest(folder) else None
    if problem:
        raise UdsInputError(f"model folder {folder} is damaged: {problem}; it was not used "
                            "(copy or build it again)")


def has_tokenizer(folder: Path) -> bool:
    """Whether a model folder carries tokenizer files (a folder may hold weights only and share
    another model's tokenizer)."""
    return any((folder / name).is_file() for name in TOKENIZER_FILES)


def load_model_from(source: str, hub: bool, device: str = "cpu", dtype: torch.dtype = torch.float32,
                    trust_pickle: bool = False, **kwargs) -> PreTrainedModel:
    """A causal LM in eval mode on `device` with parameters in `dtype`, from a folder or (`hub`) a hub ID.

    A local safetensors folder stored in another dtype, loaded on the CPU, is converted tensor by
    tensor (`_stream_convert`): the memory it takes beyond the converted model is one tensor, not
    the whole stored file."""
    stored = None if hub or device != "cpu" or "quantization_config" in kwargs else stored_dtype(Path(source))
    if stored is not None and stored != dtype:
        model = _load(source, hub, device, stored, trust_pickle, **kwargs)
        _stream_convert(model, Path(source), dtype)
        return model.eval()
    return _load(source, hub, device, dtype, trust_pickle, **kwargs)


def _load(source: str, hub: bool, device: str, dtype: torch.dtype, trust_pickle: bool, **kwargs) -> PreTrainedModel:
    kwargs = {_DTYPE_KW: dtype, "use_safetensors": None if trust_pickle else True, **kwargs}
    try:
        if hub:
            model = _from_hub_or_cache(AutoModelForCausalLM.from_pretrained, source, **kwargs)
        else:
            model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    except (OSError, ValueError) as exc:
        if hub:
            raise _offline_error(source, exc) from exc
        raise UdsInputError(f"cannot load a model from {source}: {str(exc).splitlines()[0]}"
                            + ("" if trust_pickle else
                               " (only safetensors weights load unless --trust-pickle)")) from exc
    return model.to(device).eval() if "quantization_config" not in kwargs else model.eval()


def safetensors_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.safetensors")) if folder.is_dir() else []


def stored_dtype(folder: Path) -> torch.dtype | None:
    """The one floating dtype of a folder's safetensors weights (None: no such files, or several dtypes)."""
    from safetensors import safe_open

    found = set()
    for path in safetensors_files(folder):
        with safe_open(str(path), "pt") as f:
            found |= {f.get_slice(name).get_dtype() for name in f.keys()}
    floating = {name for name in found if name in _SAFETENSORS_DTYPES}
    return _SAFETENSORS_DTYPES[floating.pop()] if len(floating) == 1 else None


_SAFETENSORS_DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}


@torch.no_grad()
def _stream_convert(model: PreTrainedModel, folder: Path, dtype: torch.dtype) -> None:
    """Every floating parameter and buffer of `model` (loaded at the stored dtype) in `dtype`, each
    read again from its file on its own: transformers maps the stored file and the pages a
    conversion touches stay mapped until the last tensor is done (a 1B float32 model from bfloat16
    files peaked at 7.6 GB instead of 5.0); opening the file per tensor unmaps them tensor by tensor.
    Parameters the files do not hold under the model's own name (renamed) are converted in place;
    buffers they do not hold (computed ones, such as RoPE frequencies) keep the dtype transformers
    gave them, as when it loads in `dtype` itself."""
    from safetensors import safe_open

    where = {}
    for path in safetensors_files(folder):
        with safe_open(str(path), "pt") as f:
            where.update({name: path for name in f.keys()})
    params = {id(p) for p in model.parameters()}
    seen: set[int] = set()
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        if id(tensor) in seen or not tensor.is_floating_point():
            continue
        seen.add(id(tensor))
        if name in where:
            with safe_open(str(where[name]), "pt") as f:
                stored = f.get_tensor(name)
            if stored.shape == tensor.shape:
                tensor.data = stored.to(dtype)
                del stored
                continue
        if id(tensor) in params:
            tensor.data = tensor.data.to(dtype)
    setattr(model.config, _DTYPE_KW, dtype)


def load_config_from(source: str, hub: bool):
    """The transformers config of a folder or (`hub`) a hub ID, without its weights."""
    from transformers import AutoConfig

    try:
        return _from_hub_or_cache(AutoConfig.from_pretrained, source) if hub else AutoConfig.from_pretrained(source)
    except (OSError, ValueError) as exc:
        if hub:
            raise _offline_error(source, exc) from exc
        raise UdsInputError(f"cannot read a model config from {source}: {str(exc).splitlines()[0]}") from exc


def load_tokenizer_from(source: str, hub: bool) -> PreTrainedTokenizerBase:
    """The tokenizer of a folder or (`hub`) a hub ID; a pad token is set to eos when it has none (spec §2.6)."""
    try:
        tok = (_from_hub_or_cache(AutoTokenizer.from_pretrained, source) if hub
               else AutoTokenizer.from_pretrained(source))
    except (OSError, ValueError) as exc:
        if hub:
            raise _offline_error(source, exc) from exc
        raise UdsInputError(f"cannot load a tokenizer from {source}: {str(exc).splitlines()[0]}") from exc
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok
