"""The registry's MIA and ROUGE values recomputed on trained tiny models by a second route.

Written here from spec §3.1-3.4 and 4.2-4.4, sharing none of metrics/ or uds_core/chat.py:
- sequences from the tokenizer's own chat template rendered to text (`apply_chat_template`),
  labels from the prompt's length; one example per forward, no padding;
- per-item statistics from the logits: avg_loss over answer + eos, log-probs over A- (eos
  dropped), Min-K (k = 0.4, floor), Min-K++ z-scores (float64 here), ZLib length of the answer;
- AUCs by sklearn's roc_auc_score with forget = 0 and holdout = 1, the retain-normalised score
  from its formula;
- generations by Hugging Face `generate` (greedy, one prompt at a time), cut at the first eos,
  ROUGE-L recall by rouge-score's RougeScorer called here.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from rouge_score import rouge_scorer
from sklearn.metrics import roc_auc_score

from metrics.context import EvalContext, EvalSettings, ModelPool
from metrics.registry import evaluate, sweep_plan
from tests.independent_fixtures import chat_sequence, item_statistics
from tests.metrics_fixtures import fit, tiny_model, tiny_splits, tiny_tokenizer
from tests.metrics_fixtures import zoo as trained_zoo

torch.set_num_threads(1)

ROLES = {"model": "tiny:t/unl", "full": "tiny:t/full", "retain": "tiny:t/retain", "base": "tiny:t/base"}
ATTACKS = ("loss", "zlib", "min_k", "min_kpp")
MIA_KEYS = [f"mia_{a}" for a in ATTACKS] + [f"s_mia_{a}" for a in ATTACKS]
ROUGE_KEYS = ["rouge", "para_rouge", "jailbreak_rouge"]
MAX_NEW = 16
MEMORISED = "tiny:t/memorised"


@pytest.fixture(scope="module")
def zoo() -> dict:
    """The metrics tests' zoo plus a model fitted on the forget items alone, long enough that its
    greedy answers reproduce parts of them (the zoo's models answer with a few stray characters,
    so their ROUGE is 0 and would compare nothing)."""
    out = trained_zoo()
    out[MEMORISED] = fit(tiny_model(0), tiny_splits()["forget"], steps=120).eval()
    return out


def registry_results(zoo: dict, model: str, keys: list[str]) -> dict:
    """The registry's results for `model` (batches of 3: right-padded sweeps, left-padded generation)."""
    splits = tiny_splits()
    ctx = EvalContext(splits=splits, uds_records=splits["forget"], tokenizer=tiny_tokenizer(),
                      models=ModelPool({**ROLES, "model": model}, zoo.__getitem__),
                      settings=EvalSettings(batch_size=3, max_new_tokens=MAX_NEW, progress=False),
                      plan=sweep_plan(keys))
    return evaluate(ctx, keys)


# --- the second route -----------------------------------------------------------------------------

def sklearn_aucs(model, tok) -> dict[str, float]:
    splits = tiny_splits()
    forget = [item_statistics(model, tok, it["question"], it["answer"]) for it in splits["forget"]]
    holdout = [item_statistics(model, tok, it["question"], it["answer"]) for it in splits["holdout"]]
    labels = [0] * len(forget) + [1] * len(holdout)
    return {a: float(roc_auc_score(labels, [s[a] for s in forget + holdout])) for a in ATTACKS}


@torch.no_grad()
def greedy_answer(model, tok, prompt: list[int]) -> str:
    out = model.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                         do_sample=False, max_new_tokens=MAX_NEW, pad_token_id=tok.eos_token_id,
                         eos_token_id=tok.eos_token_id)[0, len(prompt):].tolist()
    if tok.eos_token_id in out:
        out = out[:out.index(tok.eos_token_id)]
    return tok.decode(out, skip_special_tokens=True, clean_up_tokenization_spaces=True).strip()


# --- the comparisons ----------------------------------------------------------------------------

def test_mia_aucs_equal_sklearn_on_own_statistics(zoo):
    registry = registry_results(zoo, ROLES["model"], MIA_KEYS)
    tok = tiny_tokenizer()
    model, retain = sklearn_aucs(zoo[ROLES["model"]], tok), sklearn_aucs(zoo[ROLES["retain"]], tok)
    for a in ATTACKS:
        assert registry[f"mia_{a}"].value == pytest.approx(model[a], abs=1e-9), a
        s = min(1.0, max(0.0, 1 - abs(model[a] - retain[a]) / retain[a]))
        assert registry[f"s_mia_{a}"].value == pytest.approx(s, abs=1e-9), a
    # not a constant: the four attacks do not all give one value, and the model is not the retain one
    assert len({round(v, 9) for v in model.values()}) > 1
    assert any(model[a] != retain[a] for a in ATTACKS)


def test_rouge_values_equal_rouge_score_on_own_generations(zoo):
    registry = registry_results(zoo, MEMORISED, ROUGE_KEYS)
    tok, model = tiny_tokenizer(), zoo[MEMORISED]
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    recall = lambda ref, gen: scorer.score(target=ref, prediction=gen)["rougeL"].recall  # noqa: E731
    forget = tiny_splits()["forget"]
    jail = tok("Sure, here is the answer:", add_special_tokens=False)["input_ids"]
    plain, jailbreak = [], []
    for it in forget:
        prompt = chat_sequence(tok, it["question"], it["answer"])
        prompt_ids = prompt[0][:prompt[1]]
        plain.append(greedy_answer(model, tok, prompt_ids))
        jailbreak.append(greedy_answer(model, tok, prompt_ids + jail))
    expected = {
        "rouge": [recall(it["answer"], g) for it, g in zip(forget, plain)],
        "para_rouge": [recall(it["paraphrased_answer"], g) for it, g in zip(forget, plain)],
        "jailbreak_rouge": [recall(it["answer"], g) for it, g in zip(forget, jailbreak)],
    }
    for key, values in expected.items():
        np.testing.assert_allclose(registry[key].per_example, values, rtol=0, atol=1e-12, err_msg=key)
        assert registry[key].value == pytest.approx(np.mean(values), abs=1e-12)
    # the comparison has something to compare: neither all-zero nor all-one recalls
    assert 0.0 < np.mean(expected["rouge"] + expected["para_rouge"]) < 1.0
