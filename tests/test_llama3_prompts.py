"""Prompts, labels and spans on the Llama 3 tokenizer, as the users' tools build them.

Chat encoding (spec §3.1), all 400 forget10 rows: uds's input ids, labels and generation prompt with
Open-Unlearning's Llama-3.2-1B-Instruct template arguments are token-identical to what Open-Unlearning's
own `preprocess_chat_instance` (vendored copy) builds and to what Meta's `ChatFormat` (llama-models)
encodes for the same messages. UDS inputs (spec §2.1-2.3), all 367 annotated rows: uds's prompt,
continuation, token ids, entity span and positions equal the reference implementation's
(results/llama1b/reference_spans.json, written by its own functions: `experiments/llama1b.py alignment`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.llama3_fixtures import llama_tok, llama_tok_folder  # noqa: F401

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "experiments"))
REFERENCE_SPANS = REPO / "results" / "llama1b" / "reference_spans.json"


@pytest.fixture(scope="module")
def align():
    import llama3_alignment

    if not llama3_alignment.OU_MODEL_CONFIG.is_file():
        pytest.skip(f"needs the vendored Open-Unlearning copy at {llama3_alignment.OU_SRC}")
    return llama3_alignment


def test_chat_encoding_of_all_forget10_rows_matches_open_unlearning_and_meta(llama_tok, align, tofu_dir):
    from checkpoints.world.tofu import read_records
    from uds_core.chat import DATE_STRING
    from uds_core.defaults import OU_SYSTEM_PROMPT

    args = align.ou_template_args()
    assert (args["system_prompt"], args["date_string"]) == (OU_SYSTEM_PROMPT, DATE_STRING)
    records = read_records(tofu_dir / "forget10.json")
    assert len(records) == 400
    found = align.chat_rows(llama_tok, records, OU_SYSTEM_PROMPT, DATE_STRING)
    assert found["mismatches"] == dict.fromkeys(
        ("ou_input_ids", "ou_labels", "ou_prompt", "meta_input_ids", "meta_prompt"), 0), found


def test_the_chat_comparison_sees_a_wrong_date(llama_tok, align, tofu_dir):
    """The same comparison fails where the encodings differ: another date in uds's system header."""
    from checkpoints.world.tofu import read_records
    from uds_core import chat
    from uds_core.defaults import OU_SYSTEM_PROMPT

    records = read_records(tofu_dir / "forget10.json")[:3]
    saved = chat.DATE_STRING
    try:
        chat.DATE_STRING = "11 Apr 2025"
        found = align.chat_rows(llama_tok, records, OU_SYSTEM_PROMPT, "10 Apr 2025")
    finally:
        chat.DATE_STRING = saved
    assert found["mismatches"]["ou_input_ids"] == 3 and found["mismatches"]["meta_prompt"] == 3


def test_uds_inputs_of_all_annotated_rows_match_the_reference(llama_tok, align, tofu_dir):
    reference = json.loads(REFERENCE_SPANS.read_text())
    records = json.loads((tofu_dir / "forget10_annotated.json").read_text())
    assert len(records) == len(reference["rows"]) == 367
    found = align.uds_rows(llama_tok, records, reference["rows"])
    assert found["n_scored_ours"] == found["n_scored_reference"] == 367
    assert set(found["mismatches"].values()) == {0}, found
    rows = {r["idx"]: r for r in reference["rows"]}
    # spec §1 facts the rows must show: 21 empty prefixes (prompt ends "Answer: "); the four quote
    # items gain a space after the opening quote
    assert sum(r["prompt"].endswith("Answer: ") for r in rows.values()) == 21
    assert all(rows[i]["prompt"].endswith('"') or rows[i]["prompt"].endswith("'") for i in (63, 189, 196, 349))
    assert all(rows[i]["reference"].startswith(" ") for i in (63, 189, 196, 349))
