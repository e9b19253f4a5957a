"""A CI-sized "full" model on a real pretrained LM: SmolLM2-135M-Instruct briefly fine-tuned on a
few TOFU forget10 QA through its own chat template (the whole `smol` world is larger).

With that model as full and the pretrained model as retain, `uds score` runs on a 30-layer model
with a 49k-token vocabulary and subword entity spans (re-derived for this tokenizer from the
annotated entity text at scoring time, uds_core/prompts.py).

    python -m checkpoints.smol_ci --out DIR [--examples 8] [--epochs 4] [--lr 3e-4]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from checkpoints.specs import default_tofu_annotated, load_model, load_tokenizer
from checkpoints.world.train import Loop, TrainConfig, collate, train
from uds_core.chat import encode_chat
from uds_core.data import load_annotated
from uds_core.errors import UdsInputError

BASE = "smollm2-135m-instruct"


@dataclass(frozen=True)
class SmolCiConfig:
    examples: int = 8        # the first N annotated forget10 records (one author per 20)
    epochs: int = 4          # full-batch steps when batch_size >= examples
    lr: float = 3e-4
    batch_size: int = 8
    seed: int = 0


def forget_subset(n: int, tofu_dir: str | None = None) -> list[dict]:
    """The first `n` records of the annotated forget10 file (question, answer, prefix, entity, ...)."""
    records = load_annotated(default_tofu_annotated(tofu_dir))
    if not 0 < n <= len(records):
        raise UdsInputError(f"--examples must be 1..{len(records)}, got {n}")
    return records[:n]


def build_full(out: Path, cfg: SmolCiConfig = SmolCiConfig(), tofu_dir: str | None = None,
               base: str = BASE, progress: bool = False) -> dict:
    """Fine-tune `base` on the subset (answer-only loss, chat template with its default system
    turn) and save it with its tokenizer to `out/full`, the subset to `out/data.json`.

    Returns {"full": folder, "data": file, "losses": per-step losses, "seconds": training time}.
    """
    records = forget_subset(cfg.examples, tofu_dir)
    tok = load_tokenizer(base)
    model = load_model(base)
    torch.manual_seed(cfg.seed)
    data = [encode_chat(tok, r["question"], r["answer"]) for r in records]
    t0 = time.perf_counter()
    train_cfg = TrainConfig(lr=cfg.lr, epochs=cfg.epochs, batch_size=cfg.batch_size, seed=cfg.seed)
    losses = train(model, data, train_cfg, lambda b: collate(b, tok.pad_token_id),
                   loop=Loop(desc="smol-ci full", progress=progress))
    seconds = time.perf_counter() - t0
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out / "full")
    tok.save_pretrained(out / "full")
    (out / "data.json").write_text(json.dumps(records, ensure_ascii=False, indent=1))
    return {"full": out / "full", "data": out / "data.json", "losses": losses, "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m checkpoints.smol_ci", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--examples", type=int, default=SmolCiConfig.examples)
    p.add_argument("--epochs", type=int, default=SmolCiConfig.epochs)
    p.add_argument("--lr", type=float, default=SmolCiConfig.lr)
    p.add_argument("--tofu-dir")
    a = p.parse_args(argv)
    built = build_full(a.out, SmolCiConfig(a.examples, a.epochs, a.lr), a.tofu_dir, progress=True)
    print(f"full model {built['full']} ({built['seconds']:.0f} s; loss {built['losses'][0]:.3f} -> "
          f"{built['losses'][-1]:.3f}); data {built['data']}")
    print(f"uds score --unlearned {built['full']} --full {built['full']} --retain {BASE} --data {built['data']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
