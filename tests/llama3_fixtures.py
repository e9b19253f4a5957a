"""The Llama 3 tokenizer folder built once per session from the `llama-models` wheel (skipped, with
the install line, where the wheel or tiktoken is missing), and every string of the TOFU files."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

WHEEL_SKIP = "needs the llama extra (pip install -e '.[llama]': llama-models==0.3.0, tiktoken)"


def have_wheel() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("llama_models", "tiktoken"))


@pytest.fixture(scope="session")
def llama_tok_folder(tmp_path_factory) -> Path:
    if not have_wheel():
        pytest.skip(WHEEL_SKIP)
    from checkpoints import llama3

    return llama3.save_tokenizer(tmp_path_factory.mktemp("llama3") / "tokenizer")


@pytest.fixture(scope="session")
def llama_tok(llama_tok_folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(llama_tok_folder)


@pytest.fixture(scope="session")
def meta_tok():
    """Meta's reference encoder (`llama_models.llama3.tokenizer.Tokenizer`)."""
    if not have_wheel():
        pytest.skip(WHEEL_SKIP)
    from checkpoints import llama3

    return llama3.official_tokenizer()


def strings_of(value) -> list[str]:
    """Every string inside a JSON value (lists and objects walked)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in strings_of(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_of(v)]
    return []


def tofu_strings(tofu_dir: Path) -> dict[str, list[str]]:
    """File name -> every string field of every record of that TOFU file (JSON and JSONL)."""
    from checkpoints.world.tofu import read_records

    out = {}
    for path in sorted(tofu_dir.glob("*.json*")):
        if path.suffix == ".jsonl":   # idontknow.jsonl: one plain line per reply
            records = [line for line in path.read_text().splitlines() if line.strip()]
        else:
            records = read_records(path)
        out[path.name] = strings_of(records)
    return out
