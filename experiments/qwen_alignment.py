"""How the annotated forget10 entities align to a model's tokenizer: every example, aligned or why not.

    python experiments/qwen_alignment.py --model qwen2.5-coder-1.5b-instruct --out results/qwen/alignment.json

The annotated file gives entity spans as Llama-3 token indices; `uds score` re-derives them for the
model's tokenizer from the entity text (`uds_core.prompts`). For each of the 367 annotated
examples this records whether it aligned (else the reason it is skipped), the tokens of its span,
whether they decode to more than the entity (a token shared with the next character), and whether
the span is the smallest cover (dropping its first or last token uncovers the entity). Tokenizer
only: no model is loaded.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    p.add_argument("--data", default=None, help="annotated forget10 file (default: the project's)")
    p.add_argument("--first", type=int, default=40, help="also count the first N examples (the worlds' two authors)")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    from checkpoints.specs import default_tofu_annotated, load_tokenizer
    from uds_core.data import load_annotated
    from uds_core.prompts import prepare_items

    records = load_annotated(Path(a.data) if a.data else default_tofu_annotated())
    tok = load_tokenizer(a.model)
    prepared, skipped = prepare_items(records, tok)
    entity = {r["idx"]: (r.get("gt_entity") or r["entity"]).strip() for r in records}
    rows = []
    for item in prepared:
        ids, text = item.target_ids, entity[item.idx]
        decoded = tok.decode(ids)
        minimal = len(ids) == 1 or (text not in tok.decode(ids[1:]) and text not in tok.decode(ids[:-1]))
        rows.append({"idx": item.idx, "tokens": len(ids), "covers": text in decoded, "minimal": minimal,
                     "decoded": decoded, "entity": text, "wider": decoded.strip() != text})
    out = {"model": a.model, "examples": len(records), "aligned": len(prepared),
           "skipped": [{"idx": s.idx, "reason": s.reason} for s in skipped],
           "not_covering": [r["idx"] for r in rows if not r["covers"]],
           "not_minimal": [r["idx"] for r in rows if not r["minimal"]],
           "wider": [{"idx": r["idx"], "entity": r["entity"], "decoded": r["decoded"]} for r in rows if r["wider"]],
           "first": {"n": a.first, "records": sum(r["idx"] < a.first for r in records),
                     "aligned": sum(it.idx < a.first for it in prepared)}}
    print(f"{a.model}: {out['aligned']} of {out['examples']} annotated examples align "
          f"({len(out['skipped'])} skipped, {len(out['wider'])} spans decode wider than the entity, "
          f"{len(out['not_minimal'])} not minimal); first {a.first}: {out['first']['aligned']} of "
          f"{out['first']['records']}")
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    return out


if __name__ == "__main__":
    main()
