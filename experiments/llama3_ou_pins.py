"""The llama1b world's folders under Open-Unlearning's pins (transformers 4.45.1): run with the
Python of a venv holding OU's requirements (`VENV=... STEPS=1 bash experiments/ou_integration.sh`
makes one), it imports nothing of this project.

    $OU_VENV/bin/python experiments/llama3_ou_pins.py --world ~/.cache/uds/world/llama1b-0 \\
        --tofu $UDS_TOFU_DIR --expected /tmp/chat_ids_v5.json --out results/llama1b/ou_pins.json

Checks: the tokenizer folder loads as a fast tokenizer with the same vocabulary, special ids and
chat template; every forget10 row's chat input ids, labels and generation prompt from OU's own
`preprocess_chat_instance` (unpatched: 4.45 returns id lists) equal the ones `uds` builds under
transformers 5 (`--expected`, written by `experiments/llama1b.py chat-ids`); the model config reads
back with llama3 RoPE scaling (factor 32), tied embeddings and the 1B shape.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world", type=Path, required=True)
    p.add_argument("--tofu", type=Path, required=True)
    p.add_argument("--ou", type=Path,
                   default=Path(__file__).resolve().parents[2] / "shared" / "vendor" / "open-unlearning")
    p.add_argument("--expected", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    import transformers
    import yaml
    from transformers import AutoConfig, AutoTokenizer

    sys.path.insert(0, str(args.ou / "src"))
    from data.utils import preprocess_chat_instance   # OU's own, under its own pins

    folder = args.world / "models" / "full"
    tok = AutoTokenizer.from_pretrained(folder)
    cfg = AutoConfig.from_pretrained(folder)
    template = yaml.safe_load((args.ou / "configs" / "model" /
                               "Llama-3.2-1B-Instruct.yaml").read_text())["template_args"]
    if tok.pad_token_id is None:   # OU's get_tokenizer
        tok.pad_token = tok.eos_token
    expected = json.loads(args.expected.read_text())["rows"]
    records = json.loads((args.tofu / "forget10.json").read_text())   # one JSON array
    bad = {"input_ids": 0, "labels": 0, "prompt": 0}
    for rec, want in zip(records, expected):
        q, a = rec.get("question", rec.get("prompt")), rec.get("answer", rec.get("response"))
        item = preprocess_chat_instance(tok, template, [q], [a], 512, False)
        gen = preprocess_chat_instance(tok, template, [q], [a], 512, True)
        bad["input_ids"] += list(item["input_ids"]) != want["input_ids"]
        bad["labels"] += list(item["labels"]) != want["labels"]
        bad["prompt"] += list(gen["input_ids"]) != want["prompt"]
    doc = {"command": "OU_VENV/bin/python experiments/llama3_ou_pins.py " + " ".join(sys.argv[1:]),
           "transformers": transformers.__version__, "tokenizer_class": type(tok).__name__, "vocab": len(tok),
           "special_ids": {t: tok.convert_tokens_to_ids(t) for t in ("<|begin_of_text|>", "<|eot_id|>",
                                                                       "<|start_header_id|>", "<|end_header_id|>")},
           "bos_eos_pad": [tok.bos_token_id, tok.eos_token_id, tok.pad_token_id],
           "rope_scaling": cfg.rope_scaling, "rope_theta": cfg.rope_theta,
           "tie_word_embeddings": cfg.tie_word_embeddings,
           "shape": [cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads,
                     cfg.intermediate_size, cfg.vocab_size],
           "forget10_rows": len(expected), "chat_mismatches": bad}
    args.out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(json.dumps(doc))
    return 0 if sum(bad.values()) == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
