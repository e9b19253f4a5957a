"""Audit prompts: one row per target fact (`prompt_id, fact_id, subject, relation, gold_object,
prompt_text`, optional `subject_aliases`, `relation_aliases`, `object_aliases`), six styles, in
JSONL files named `prompts_<style>.jsonl` (the published layout, `spec-probes §3.8`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from uds_core.data import jsonl_values
from uds_core.errors import UdsInputError

# Short style name (command line) -> the published file stem.
STYLES: dict[str, str] = {
    "direct": "direct_questions", "paraphrased": "paraphrased_questions", "contextual": "contextual_questions",
    "cloze": "cloze", "continuation": "continuations", "fewshot": "fewshot_questions",
}
REQUIRED = ("subject", "relation", "gold_object", "prompt_text")
ALIAS_FIELDS = {"subject": "subject_aliases", "relation": "relation_aliases", "object": "object_aliases"}


@dataclass(frozen=True)
class PromptRow:
    style: str
    fact_id: int
    subject: str
    relation: str
    gold: str
    text: str
    subject_aliases: tuple[str, ...] = ()
    relation_aliases: tuple[str, ...] = ()
    object_aliases: tuple[str, ...] = ()


def parse_styles(text: str | None) -> list[str]:
    names = list(STYLES) if not text else [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in names if s not in STYLES]
    if bad:
        raise UdsInputError(f"unknown prompt style(s) {', '.join(bad)} (choose {', '.join(STYLES)})")
    return names


def read_prompt_file(path: Path, style: str) -> list[PromptRow]:
    rows = []
    for n, d in jsonl_values(path.read_text(), path):
        missing = [k for k in REQUIRED if not isinstance(d, dict) or not isinstance(d.get(k), str)]
        if missing:
            raise UdsInputError(f"{path}:{n}: prompt row without {', '.join(missing)}")
        rows.append(PromptRow(style, int(d.get("fact_id", d.get("prompt_id", n - 1))), d["subject"], d["relation"],
                              d["gold_object"], d["prompt_text"],
                              *(tuple(d.get(f) or ()) for f in ALIAS_FIELDS.values())))
    if not rows:
        raise UdsInputError(f"{path}: no prompt rows")
    return rows


def read_prompts(where: str | Path, styles: list[str]) -> dict[str, list[PromptRow]]:
    """{style: rows} from a folder of `prompts_<style>.jsonl` files or one such file."""
    p = Path(where)
    if p.is_file():
        style = next((s for s, stem in STYLES.items() if p.stem == f"prompts_{stem}"), "direct")
        return {style: read_prompt_file(p, style)}
    if not p.is_dir():
        raise UdsInputError(f"no prompt file or folder at {str(where)!r}")
    out = {}
    for s in styles:
        f = p / f"prompts_{STYLES[s]}.jsonl"
        if f.is_file():
            out[s] = read_prompt_file(f, s)
    if not out:
        raise UdsInputError(f"{p}: no prompts_<style>.jsonl file for styles {', '.join(styles)}")
    return out


def alias_groups(rows: list[PromptRow]) -> dict[str, list[list[str]]]:
    """Groups of equivalent names per kind, from the rows' alias fields."""
    return {"subject": [[r.subject, *r.subject_aliases] for r in rows if r.subject_aliases],
            "relation": [[r.relation, *r.relation_aliases] for r in rows if r.relation_aliases],
            "object": [[r.gold, *r.object_aliases] for r in rows if r.object_aliases]}
