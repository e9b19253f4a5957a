"""Where the TOFU files come from: one lookup, in one order, for every command.

1. A folder the user names: `--tofu-dir DIR`, else `$UDS_TOFU_DIR` (or a file: `--data FILE`).
2. For the annotated forget10 file only: the copy an installed wheel ships, when it was built with
   the file at hand (`uds_core.paths.packaged_file`).
3. The Hugging Face Hub: the dataset that publishes the file (`locuslab/TOFU`, and
   `jaeunglee/uds-annotated-tofu` for the entity annotations), fetched through `huggingface_hub`
   into `$UDS_HOME/hub` and checked (row count, fields) before any use. A fetched copy serves
   offline runs later; `HF_HUB_OFFLINE=1` uses the cached copy without asking the Hub.

Where none of these has the file, the error is one line naming the dataset ID, the flag and the
variable. Files are read in any of TOFU's layouts (`read_records`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from uds_core.data import jsonl_values
from uds_core.errors import UdsInputError
from uds_core.quiet import quiet_logger
from uds_core.paths import ANNOTATED_FORGET10, packaged_file, uds_home

ANNOTATED = "forget10_annotated"
TOFU_REPO = "locuslab/TOFU"
ANNOTATED_REPO = "jaeunglee/uds-annotated-tofu"
QA = ("question", "answer")
PERTURBED = QA + ("paraphrased_answer", "perturbed_answer")


@dataclass(frozen=True)
class TofuFile:
    """One TOFU file: its local name, where the Hub publishes it, and what a good copy holds."""
    stem: str                  # local file name without `.json`
    repo: str                  # Hugging Face dataset ID
    filename: str              # its file in that dataset
    rows: int                  # records a complete copy has
    fields: tuple[str, ...]    # keys every record has (after `prompt`/`response` are renamed)

    @property
    def flag(self) -> str:
        """The command-line option that names a local copy."""
        return "--data FILE" if self.stem == ANNOTATED else "--tofu-dir DIR"


def _tofu(stem: str, rows: int, fields: tuple[str, ...] = QA) -> TofuFile:
    return TofuFile(stem, TOFU_REPO, f"{stem}.json", rows, fields)


FILES: dict[str, TofuFile] = {f.stem: f for f in (
    TofuFile(ANNOTATED, ANNOTATED_REPO, "forget10_filtered.json", 367, ("idx",) + QA + ("prefix", "entity")),
    _tofu("full", 4000), _tofu("forget10", 400), _tofu("retain90", 3600), _tofu("holdout10", 400),
    _tofu("forget10_perturbed", 400, PERTURBED), _tofu("retain_perturbed", 400, PERTURBED),
    _tofu("real_authors", 100), _tofu("world_facts", 117),
    _tofu("real_authors_perturbed", 100, QA + ("perturbed_answer",)),
    _tofu("world_facts_perturbed", 117, QA + ("perturbed_answer",)),
)}


# ----------------------------------------------------------------------------------------------
# Reading a file in any of TOFU's layouts.

def read_records(path: str | Path) -> list[dict]:
    """Records of a TOFU file: one JSON array (or object), several arrays one per line
    (`full.json`), or JSONL. `prompt`/`response` (the keys of some `forget10.json` copies) become
    `question`/`answer`."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise UdsInputError(f"cannot read {path}: {e.strerror}") from None
    if not text.strip():
        raise UdsInputError(f"{path} is empty")
    try:
        value = json.loads(text)
        records = value if isinstance(value, list) else [value]
    except json.JSONDecodeError:
        records = []
        for _, line in jsonl_values(text, path):
            records.extend(line if isinstance(line, list) else [line])
    if not records or not all(isinstance(r, dict) for r in records):
        raise UdsInputError(f"{path} holds no list of JSON objects")
    return [standard_keys(r) for r in records]


def standard_keys(record: dict) -> dict:
    if "question" not in record and "prompt" in record:
        record = {**record, "question": record["prompt"], "answer": record.get("response")}
    return record


def check_copy(path: Path, spec: TofuFile) -> list[dict]:
    """The records of a fetched copy, after checking its row count and fields."""
    records = read_records(path)
    where = f"{spec.repo}/{spec.filename} (cached at {path})"
    if len(records) != spec.rows:
        raise UdsInputError(f"{where} has {len(records)} rows, expected {spec.rows}: an incomplete or "
                            f"changed copy; delete it to fetch it again, or pass {spec.flag}")
    for i, rec in enumerate(records):
        missing = [k for k in spec.fields if k not in rec]
        if missing:
            raise UdsInputError(f"{where}: row {i} lacks {', '.join(missing)}; pass {spec.flag}")
    return records


# ----------------------------------------------------------------------------------------------
# The lookup.

def local_folder(tofu_dir: str | Path | None = None) -> Path | None:
    """The folder of local TOFU files the user named: `tofu_dir`, else `$UDS_TOFU_DIR`."""
    folder = tofu_dir or os.environ.get("UDS_TOFU_DIR")
    return Path(folder).expanduser() if folder else None


def tofu_file(stem: str, tofu_dir: str | Path | None = None) -> Path:
    """The local path of TOFU file `stem` (e.g. "retain90", "forget10_annotated"), by the order of
    the module docstring. A named folder's file is returned as is (reading it says what is wrong);
    a Hub copy only after its check."""
    spec = FILES[stem]
    folder = local_folder(tofu_dir)
    if folder is not None:
        return folder / f"{stem}.json"
    packaged = packaged_file(ANNOTATED_FORGET10) if stem == ANNOTATED else None
    if packaged is not None:
        return packaged
    path = hub_copy(spec)
    check_copy(path, spec)
    return path


def hub_cache() -> Path:
    return uds_home() / "hub"


def hub_copy(spec: TofuFile) -> Path:
    """`spec`'s file fetched from the Hub into `hub_cache()` (or found there); UdsInputError in
    one line when neither works."""
    from huggingface_hub import hf_hub_download

    try:
        with quiet_logger("huggingface_hub"):   # its retries are warnings; `unreachable` says the failure once
            path = hf_hub_download(spec.repo, spec.filename, repo_type="dataset", cache_dir=hub_cache(),
                                   endpoint=os.environ.get("HF_ENDPOINT") or None, local_files_only=offline())
    except Exception as exc:   # no network, no such file, a proxy: all mean "no copy from the Hub"
        raise UdsInputError(unreachable(spec, exc)) from None
    return Path(path)


def unreachable(spec: TofuFile, exc: Exception | None = None) -> str:
    """The one line said when no source has `spec`'s file."""
    why = "offline (HF_HUB_OFFLINE is set) and not cached" if offline() else "the Hub did not answer"
    detail = " ".join(str(exc).split())[:160] if exc is not None and not offline() else ""
    return (f"{spec.stem}.json: no local copy, and the Hugging Face dataset {spec.repo} (file {spec.filename}) "
            f"could not be fetched ({why}{': ' + detail if detail else ''}); pass {spec.flag} or set "
            "UDS_TOFU_DIR to a folder holding the TOFU JSON files")


def offline() -> bool:
    """`HF_HUB_OFFLINE` as huggingface_hub reads it, but read now (the library reads it once, at
    import)."""
    return os.environ.get("HF_HUB_OFFLINE", "").upper() in {"1", "ON", "YES", "TRUE"}
