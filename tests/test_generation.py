"""Greedy generation stays greedy whatever generation config a checkpoint ships."""

from __future__ import annotations

import torch
from transformers import GenerationConfig

from tests.engine_fixtures import make_tokenizer, tiny_model
from uds_core.gen_options import GenOptions
from uds_core.generation import greedy_generate


def _argmax_decode(model, prompt: list[int], steps: int, stops: set[int]) -> tuple[int, ...]:
    """The greedy continuation by hand: a full forward per step, the argmax token appended."""
    ids, new = list(prompt), []
    with torch.no_grad():
        for _ in range(steps):
            nxt = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
            if nxt in stops:
                break
            ids.append(nxt)
            new.append(nxt)
    return tuple(new)


def test_a_checkpoint_asking_for_sampling_is_still_decoded_greedily():
    tok = make_tokenizer()
    model = tiny_model("llama", seed=3)
    sampling = GenerationConfig(do_sample=True, temperature=5.0, top_k=0, top_p=0.5, num_beams=3,
                                repetition_penalty=8.0, no_repeat_ngram_size=1, min_new_tokens=7)
    model.generation_config = sampling
    prompts = [tok.encode("Where was the author born?"), tok.encode("Which prize did the author receive?")]
    stops = {tok.eos_token_id}
    expected = [_argmax_decode(model, p, 7, stops) for p in prompts]
    # the test can fail: generate() left to merge the checkpoint's config decodes otherwise
    naive = model.generate(input_ids=torch.tensor([prompts[0]]), generation_config=GenerationConfig(
        do_sample=False, max_new_tokens=7, eos_token_id=tok.eos_token_id, pad_token_id=tok.eos_token_id))
    assert tuple(naive[0, len(prompts[0]):].tolist()) != expected[0]
    for seed in (0, 1):
        torch.manual_seed(seed)
        got = greedy_generate(model, tok, prompts, GenOptions(batch_size=2, max_new_tokens=7, progress=False))
        assert [g.ids for g in got] == expected
    assert model.generation_config is sampling   # the checkpoint's own config is restored
