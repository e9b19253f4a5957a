"""Prompts, labels and spans on the Llama 3 tokenizer, three ways each (tests/test_llama3_prompts.py
and `experiments/llama1b.py alignment` share these helpers).

Chat encoding (the output metrics, spec §3.1), per forget10 row: what `uds` builds
(`metrics.encoding.encode_qa` / `generation_prompt`, Open-Unlearning's system prompt and
`date_string`), what Open-Unlearning builds (its own `preprocess_chat_instance`, from the vendored
copy, with the template arguments of its `configs/model/Llama-3.2-1B-Instruct.yaml`), and what
Meta's `ChatFormat` encodes for the same messages (the system turn written as the Llama-3.2 format
writes it: cutoff line, date line, system prompt).

UDS inputs (spec §2.1-2.3, no chat template), per annotated row: `uds`'s `prepare_items` against the
reference implementation's `normalize_reference_for_eval`, `get_eval_span` and `build_logprob_ctx`
(their output, `reference_rows`, comes from experiments/reference_uds.py in the reference's checkout).
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parents[1]
OU_SRC = REPO.parent / "shared" / "vendor" / "open-unlearning"
OU_MODEL_CONFIG = OU_SRC / "configs" / "model" / "Llama-3.2-1B-Instruct.yaml"


def ou_template_args() -> dict:
    """`template_args` of Open-Unlearning's Llama-3.2-1B-Instruct model config (a flat YAML mapping
    of strings; read with PyYAML, which llama-models depends on)."""
    import yaml

    return dict(yaml.safe_load(OU_MODEL_CONFIG.read_text())["template_args"])


def ou_preprocess():
    """Open-Unlearning's `preprocess_chat_instance`, from its own `src/data/utils.py` (the module's
    `datasets` import, used only by another function there, satisfied by an empty stand-in when
    `datasets` is not installed)."""
    path = OU_SRC / "src" / "data" / "utils.py"
    saved = sys.modules.get("datasets")
    if importlib.util.find_spec("datasets") is None:
        sys.modules["datasets"] = types.ModuleType("datasets")
    try:
        spec = importlib.util.spec_from_file_location("ou_data_utils", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            sys.modules.pop("datasets", None)
    return module.preprocess_chat_instance


class V4Chat:
    """A tokenizer whose `apply_chat_template(tokenize=True)` returns the id list, as transformers 4.x
    did (5.x returns a BatchEncoding, which Open-Unlearning's code, pinned to 4.45, indexes as a
    list); everything else is the wrapped tokenizer's."""

    def __init__(self, tok):
        self._tok = tok

    def __getattr__(self, name):
        return getattr(self._tok, name)

    def __call__(self, *args, **kwargs):
        return self._tok(*args, **kwargs)

    def apply_chat_template(self, *args, **kwargs):
        out = self._tok.apply_chat_template(*args, **kwargs)
        return list(out["input_ids"]) if kwargs.get("tokenize") and hasattr(out, "keys") else out


def chat_rows(tok, records: Sequence[dict], system_prompt: str, date_string: str) -> dict:
    """Per record (question, answer): uds's, OU's and ChatFormat's input ids, labels and generation
    prompt; returns counts of mismatches and the first few mismatching rows."""
    from llama_models.datatypes import RawMessage, StopReason

    from checkpoints.llama3 import official_chat_format, system_header_text
    from metrics.encoding import encode_qa, generation_prompt

    preprocess, args = ou_preprocess(), ou_template_args()
    ou_tok = V4Chat(tok)
    fmt = official_chat_format()
    system = RawMessage(role="system", content=system_header_text(date_string, system_prompt))
    bad = {"ou_input_ids": [], "ou_labels": [], "ou_prompt": [], "meta_input_ids": [], "meta_prompt": []}
    for i, rec in enumerate(records):
        q, a = rec["question"], rec["answer"]
        ours = encode_qa(tok, q, a, system_prompt)
        ours_prompt = list(generation_prompt(tok, q, system_prompt))
        # as OU's QADataset._process_sample calls it (one turn, no few-shot: lists of one)
        ou = preprocess(ou_tok, args, [q], [a], 512, False)
        ou_gen = preprocess(ou_tok, args, [q], [a], 512, True)
        user = RawMessage(role="user", content=q.strip())
        answer = RawMessage(role="assistant", content=a.strip(), stop_reason=StopReason.end_of_turn)
        meta_ids = [fmt.tokenizer.bos_id]
        for m in (system, user, answer):
            meta_ids += fmt.encode_message(m, None)[0]
        meta_prompt = fmt.encode_dialog_prompt([system, user]).tokens
        checks = {"ou_input_ids": list(ou["input_ids"]) == list(ours.input_ids),
                  "ou_labels": list(ou["labels"]) == list(ours.labels),
                  "ou_prompt": list(ou_gen["input_ids"]) == ours_prompt,
                  "meta_input_ids": meta_ids == list(ours.input_ids),
                  "meta_prompt": list(meta_prompt) == ours_prompt}
        for name, ok in checks.items():
            if not ok:
                bad[name].append(rec.get("idx", i))
    return {"n_rows": len(records), "mismatches": {k: len(v) for k, v in bad.items()},
            "first_mismatching_rows": {k: v[:5] for k, v in bad.items() if v}}


def uds_rows(tok, records: Sequence[dict], reference_rows: Sequence[dict]) -> dict:
    """uds's prompt, reference text, prompt ids, continuation ids and entity span of each annotated
    record against the reference's; returns counts and the first mismatching idx per field."""
    from uds_core.prompts import PreparedItem, prepare_item

    ref = {r["idx"]: r for r in reference_rows}
    bad: dict[str, list] = {k: [] for k in ("prompt", "reference", "prompt_ids", "ref_ids", "eval_span",
                                            "positions", "skipped")}
    scored = 0
    for rec in records:
        r, item = ref[rec["idx"]], prepare_item(rec, tok)
        if not isinstance(item, PreparedItem):
            (bad["skipped"] if r["eval_span"] is not None else []).append(rec["idx"])
            continue
        scored += 1
        fields = {"prompt": item.prompt == r["prompt"], "reference": item.reference == r["reference"],
                  "prompt_ids": list(item.prompt_ids) == r["prompt_ids"],
                  "ref_ids": list(item.ref_ids) == r["ref_ids"], "eval_span": list(item.span) == r["eval_span"],
                  "positions": (item.eval_positions.start, item.eval_positions.stop) ==
                      (r["eval_start"], r["eval_end"])}
        for name, ok in fields.items():
            if not ok:
                bad[name].append(rec["idx"])
    return {"n_rows": len(records), "n_scored_ours": scored,
            "n_scored_reference": sum(r["eval_span"] is not None for r in reference_rows),
            "mismatches": {k: len(v) for k, v in bad.items()},
            "first_mismatching_rows": {k: v[:5] for k, v in bad.items() if v}}
