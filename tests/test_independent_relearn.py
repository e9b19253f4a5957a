"""Relearning (robustness R, spec §5.3): it trains on the data it is given and lowers that data's
loss, checked on a trained tiny zoo with losses computed here (tests/independent_fixtures.py: the
chat form's mean answer cross-entropy, one example per forward).

Planted contrast: the same unlearned model relearned once on the forget items and once on the
holdout items (other authors, same sentence pattern). Fitting the pattern lowers both losses a
little either way, so "the forget loss fell" alone would pass for a run on the wrong data; the
double dissociation (forget run lowers the forget loss more, holdout run the holdout loss more)
does not. And the first step's loss, taken over all sequences at once, is recomputed here from the
forget answers in both training forms, so wrong labels or a subset of the items fail too.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch

from meta_eval.perturb import ensure_relearned, relearn, relearn_config
from tests.independent_fixtures import chat_sequence, item_statistics
from tests.metrics_fixtures import tiny_splits, tiny_tokenizer
from tests.metrics_fixtures import zoo as trained_zoo
from transformers import AutoModelForCausalLM

torch.set_num_threads(1)


def mean_loss(model, items: list[dict]) -> float:
    tok = tiny_tokenizer()
    return float(np.mean([item_statistics(model, tok, it["question"], it["answer"])["loss"] for it in items]))


@pytest.fixture(scope="module")
def zoo() -> dict:
    """The metrics tests' tiny zoo; tests copy a model before training it."""
    return trained_zoo()


@pytest.mark.parametrize("lr", [2e-4, 1e-2])   # the recipe's rate, and a strong one
def test_relearning_trains_on_the_given_set(zoo, lr):
    splits = tiny_splits()
    forget, holdout = splits["forget"], splits["holdout"]
    unl = zoo["tiny:t/unl"]
    before = {"forget": mean_loss(unl, forget), "holdout": mean_loss(unl, holdout)}
    after = {}
    for name, data in (("forget", forget), ("holdout", holdout)):
        model = copy.deepcopy(unl).train()
        losses = relearn(model, tiny_tokenizer(), data, relearn_config(batch_size=4, lr=lr))
        assert len(losses) == -(-2 * len(data) // 4)   # one epoch over chat + raw forms, batches of 4
        model.eval()
        after[name] = {"forget": mean_loss(model, forget), "holdout": mean_loss(model, holdout)}
    assert after["forget"]["forget"] < before["forget"]               # below the unlearned model's
    drop = lambda run, split: before[split] - after[run][split]       # noqa: E731
    assert drop("forget", "forget") > drop("holdout", "forget")
    assert drop("holdout", "holdout") > drop("forget", "holdout")


def test_ensure_relearned_saves_the_relearned_model(zoo, tmp_path):
    """The meta-eval's path (a saved checkpoint in, a saved relearned folder out) lowers the forget
    loss of the model it reads, and a second call with the same stamp trains nothing."""
    tok, forget = tiny_tokenizer(), tiny_splits()["forget"]
    unl = zoo["tiny:t/unl"]
    unl.save_pretrained(tmp_path / "unl")
    tok.save_pretrained(tmp_path / "unl")
    recipe = relearn_config(batch_size=4, lr=1e-2)
    folder = ensure_relearned(str(tmp_path / "unl"), tmp_path / "unl-relearn", "stamp-1", tok, forget, recipe)
    relearned = AutoModelForCausalLM.from_pretrained(folder).eval()
    assert mean_loss(relearned, forget) < mean_loss(unl, forget) - 0.1
    assert len(json.loads((folder / "losses.json").read_text())) == 3      # 10 sequences, batches of 4
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert ensure_relearned(str(tmp_path / "unl"), folder, "stamp-1", tok, forget, recipe) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp


@torch.no_grad()
def token_weighted_loss(model, items: list[dict]) -> float:
    """Mean cross-entropy over every labelled token of each item's two training forms: the chat
    turn (answer + eos) and the raw "Question: {q}\\nAnswer:" prompt with BOS followed by
    " {answer}" + eos (spec §12: the tiny world learns and relearns both)."""
    tok = tiny_tokenizer()
    total, count = 0.0, 0
    for it in items:
        chat, n_chat = chat_sequence(tok, it["question"], it["answer"])
        prompt = tok(f"Question: {it['question']}\nAnswer:", add_special_tokens=True)["input_ids"]
        raw = prompt + tok(" " + it["answer"], add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        for ids, n_prompt in ((chat, n_chat), (raw, len(prompt))):
            logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].double(), dim=-1)
            total -= logp[torch.arange(n_prompt - 1, len(ids) - 1), torch.tensor(ids[n_prompt:])].sum().item()
            count += len(ids) - n_prompt
    return total / count


def test_first_step_loss_is_the_forget_answers_loss(zoo):
    """One step over all sequences at once: the step loss (before the update) is the loss of
    exactly the forget answers in both forms, computed here."""
    forget = tiny_splits()["forget"]
    unl = zoo["tiny:t/unl"]
    expected = token_weighted_loss(unl, forget)
    losses = relearn(copy.deepcopy(unl).train(), tiny_tokenizer(), forget, relearn_config(batch_size=2 * len(forget)))
    assert len(losses) == 1 and losses[0] == pytest.approx(expected, rel=1e-5)
    assert abs(expected - token_weighted_loss(unl, tiny_splits()["holdout"])) > 0.1   # another set's loss differs
