"""The arithmetic of one UDS item at a model's shape: what the reference implementation computes
(`compute_uds.py` at batch B: 35 full teacher-forced passes per batch with the LM head at every
position, and three 30-token greedy generations per item) against what `uds score`'s fast engine
computes (three capture passes up to the entity's last token, then each patched layer's entity
window through the blocks above it, the LM head on the scored positions only; uds_core/suffix.py).

Counts are of matrix multiplications (2 FLOPs per weight per token); attention's score and value
products grow with the sequence and are left out (under 2% here: sequences of about 60 tokens
against hidden 2048). `python experiments/llama1b.py work` writes results/llama1b/work.json.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Shape:
    """A decoder's matrix sizes: hidden d, MLP width, query and key/value heads, layers, vocabulary."""
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    layers: int
    vocab: int

    @property
    def layer_weights(self) -> int:
        """Weights one token meets in one block: q and o (d x d), k and v (d x d_kv), gate/up/down."""
        kv = self.hidden * self.kv_heads // self.heads
        return 2 * self.hidden * self.hidden + 2 * self.hidden * kv + 3 * self.hidden * self.intermediate

    @property
    def head_weights(self) -> int:
        return self.vocab * self.hidden


@dataclass(frozen=True)
class Item:
    """One annotated item: prompt and continuation lengths in tokens, scored window [start, end)."""
    prompt: int
    continuation: int
    start: int
    end: int


def reference_work(items: Sequence[Item], shape: Shape, *, batch_size: int, gen_tokens: int = 30,
                   generations: int = 3) -> dict:
    """Token-blocks (one token through one block) and LM-head rows of the reference on `items`.
    Per batch (padded to its longest prompt + continuation): the full model's baseline pass, the
    retain and unlearned hidden-state passes, and one patched full pass per layer and stage, every
    one a whole forward with logits at every position. Per item: `generations` greedy generations
    of `gen_tokens` (the prompt once through every block, its last position and each new token
    through the head)."""
    passes = 3 + 2 * shape.layers
    blocks = rows = 0
    for i in range(0, len(items), batch_size):
        batch = items[i:i + batch_size]
        tokens = len(batch) * max(it.prompt + it.continuation for it in batch)
        blocks += passes * tokens * shape.layers
        rows += passes * tokens
    for it in items:
        blocks += generations * (it.prompt + gen_tokens - 1) * shape.layers
        rows += generations * gen_tokens
    return {"token_blocks": blocks, "head_rows": rows}


def fast_work(items: Sequence[Item], shape: Shape) -> dict:
    """Token-blocks and LM-head rows of the fast engine on `items` (S1 and S2, no S1 cache): the
    full, retain and unlearned models each run once over positions [0, end) (the full model's
    scored positions through the head: the baseline), then per stage and patched layer l the
    window's end - start tokens through blocks l+1 .. L-1 and the head."""
    blocks = rows = 0
    for it in items:
        window = it.end - it.start
        blocks += 3 * it.end * shape.layers
        blocks += 2 * window * sum(shape.layers - 1 - layer for layer in range(shape.layers))
        rows += window + 2 * shape.layers * window
    return {"token_blocks": blocks, "head_rows": rows}


def gflops(work: dict, shape: Shape) -> float:
    return 2 * (work["token_blocks"] * shape.layer_weights + work["head_rows"] * shape.head_weights) / 1e9
