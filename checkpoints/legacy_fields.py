"""Folders that transformers 4.45 (Open-Unlearning's pin) must read too: the 4.x spellings of the
fields transformers 5 renamed, added to a saved folder's config and tokenizer config."""

from __future__ import annotations

import json
from pathlib import Path

from uds_core import manifest


# Fields transformers 5 writes under new names and 4.45 (Open-Unlearning's pin) reads under the old
# ones: without them 4.45 silently takes rope_theta = 10000 and cannot resolve the tokenizer class.
LEGACY_CONFIG_FIELDS = {"rope_theta": lambda c: (c.get("rope_parameters") or {}).get("rope_theta"),
                        "rope_scaling": lambda c: _rope_scaling(c.get("rope_parameters") or {}),
                        "torch_dtype": lambda c: c.get("dtype")}


def _rope_scaling(params: dict) -> dict | None:
    """4.x's `rope_scaling` (a scaled RoPE such as Llama 3's): 5.x's `rope_parameters` without the
    theta; None for plain RoPE, which 4.x spells by leaving the field out."""
    if params.get("rope_type", "default") == "default":
        return None
    return {k: v for k, v in params.items() if k != "rope_theta"}
LEGACY_TOKENIZER_FIELDS = {"additional_special_tokens": lambda t: t.get("extra_special_tokens")
                           if isinstance(t.get("extra_special_tokens"), list) else None}
LEGACY_TOKENIZER_CLASS = {"TokenizersBackend": "PreTrainedTokenizerFast"}


def write_legacy_fields(folder: Path) -> None:
    """Add the transformers-4.x spellings to a saved folder's config.json / tokenizer_config.json
    (weights untouched; fields already there are kept), so the model also loads under 4.45. A
    built folder (one with a digest manifest, a copy of a world, say) gets the changed files'
    digests recorded: the edit is deliberate, not damage."""
    changed = []

    def patch(name: str, fields: dict, extra=lambda d: None) -> None:
        path = folder / name
        if not path.is_file():
            return
        old = path.read_text()
        doc = json.loads(old)
        doc.update({k: v for k, fn in fields.items() if k not in doc and (v := fn(doc)) is not None})
        extra(doc)
        new = json.dumps(doc, indent=2, sort_keys=True) + "\n"
        if new != old:
            path.write_text(new)
            changed.append(name)

    def tokenizer_extra(doc: dict) -> None:
        doc["tokenizer_class"] = LEGACY_TOKENIZER_CLASS.get(doc.get("tokenizer_class"), doc.get("tokenizer_class"))
        template = folder / "chat_template.jinja"   # 4.45 reads the template from the config only
        if "chat_template" not in doc and template.is_file():
            doc["chat_template"] = template.read_text()
    patch("config.json", LEGACY_CONFIG_FIELDS)
    patch("tokenizer_config.json", LEGACY_TOKENIZER_FIELDS, tokenizer_extra)
    if changed and manifest.has_manifest(folder):
        manifest.update(folder, changed)
