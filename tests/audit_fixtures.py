"""A scripted stand-in for an LMLM, for audit tests that must not depend on training.

`ScriptedLM` answers like a perfect LMLM (writes the lookup call for its prompt, then copies the
spliced value) or, with `parametric=True`, like a model that answers the gold from its weights
and never looks up, or, with `ignore_value=True`, like a model that writes the lookup call and
then answers the gold from its weights whatever value was spliced in. It is driven through the same
interface the splice loop uses (prefill, then
one token per step with its cache), keeping each row's tokens as its "cache".
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

from checkpoints.lmlm.markup import call_text


class ScriptedLM(torch.nn.Module):
    def __init__(self, tok, script: dict[str, tuple[str, str, str]], parametric: bool = False,
                 ignore_value: bool = False):
        """`script[prompt_text] = (subject, relation, gold)`."""
        super().__init__()
        self.tok, self.parametric, self.ignore_value = tok, parametric, ignore_value
        self.script = {tuple(tok.encode(p, add_special_tokens=True)): v for p, v in script.items()}
        self.generation_config = None

    def forward(self, input_ids, attention_mask=None, position_ids=None, cache=None, use_cache=True):
        rows = cache or [[t for t, m in zip(ids, mask) if m] for ids, mask in
                                   zip(input_ids.tolist(), attention_mask.tolist())]
        if cache is not None:
            rows = [r + [t] for r, t in zip(rows, input_ids[:, -1].tolist())]
        logits = torch.full((len(rows), 1, len(self.tok)), -1e9)
        for b, r in enumerate(rows):
            logits[b, 0, self._next(r)] = 0.0
        return SimpleNamespace(logits=logits, cache=rows)

    def _next(self, row: list[int]) -> int:
        eos = self.tok.eos_token_id
        prompt = next((p for p in self.script if tuple(row[:len(p)]) == p), None)
        if prompt is None:
            return eos
        s, r, gold = self.script[prompt]
        new = row[len(prompt):]
        if self.parametric:
            target = self.tok.encode(" " + gold, add_special_tokens=False) + [eos]
            return target[len(new)] if len(new) < len(target) else eos
        call = self.tok.encode(call_text(s, r), add_special_tokens=False)
        if len(new) < len(call):
            return call[len(new)]
        text = self.tok.decode(new[len(call):])
        if "]" not in text:
            return eos   # the splice loop feeds the value; reaching here means no value came
        value = gold if self.ignore_value else text[:text.index("]")].strip()
        answer = self.tok.encode(" " + value, add_special_tokens=False) + [eos]
        done = len(self.tok.encode(text[:text.index("]") + 1], add_special_tokens=False))
        k = len(new) - len(call) - done
        return answer[k] if 0 <= k < len(answer) else eos


def random_llama(tok, seed: int = 0):
    """A randomly initialised one-layer Llama over `tok`'s vocabulary."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                      num_key_value_heads=1, intermediate_size=32, bos_token_id=tok.bos_token_id,
                      eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    return LlamaForCausalLM(cfg).eval()
