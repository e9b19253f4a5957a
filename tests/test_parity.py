"""Parity modes (`--parity spec|reference|open-unlearning`, docs/parity.md), each checked against
numbers derived in the test: the reference's 1e-12 probability floor, its bf16 Logit Lens and
Fisher-mask arithmetic, Open-Unlearning's `input_ids != pad_id` attention mask and its
model-utility mean, and the measurement-cache stamp."""

from __future__ import annotations

from dataclasses import asdict, replace

import numpy as np
import pytest
import torch

from metrics.aggregate import harmonic_mean_ou
from metrics.context import EvalContext, EvalSettings, ModelPool
from metrics.encoding import encode_qa, generation_prompt
from metrics.memorization import floored_gm
from uds_core.parity import MODES, OPEN_UNLEARNING, REFERENCE, SPEC, resolve_alias
from metrics.registry import evaluate, sweep_plan
from metrics.representation import fisher_mask, fisher_masked_score, logit_lens_score
from metrics.utility import UTILITY_KEYS, model_utility
from tests.metrics_fixtures import qa_item, tiny_model, tiny_splits, tiny_tokenizer
from tests.metrics_fixtures import zoo as trained_zoo
from uds_core.batching import attention_mask
from uds_core.errors import UdsInputError
from uds_core.gen_options import GenOptions
from uds_core.generation import greedy_generate

FLOOR = float(np.exp(np.log(1e-12)))   # the reference's exp(mean(log(clip(p, 1e-12)))) of one floored p


def _ctx(models: dict, parity: str, keys, splits=None, batch_size: int = 3, records=()) -> EvalContext:
    splits = splits or tiny_splits()
    return EvalContext(splits=splits, uds_records=list(records), tokenizer=tiny_tokenizer(),
                       models=ModelPool({r: r for r in models}, models.__getitem__),
                       settings=EvalSettings(batch_size=batch_size, max_new_tokens=3, parity=parity, progress=False),
                       plan=sweep_plan(list(keys)))


def _avg_loss(model, question: str, answer: str) -> float:
    """Independent avg_loss: transformers' own shifted mean cross-entropy over the labelled tokens."""
    enc = encode_qa(tiny_tokenizer(), question, answer)
    with torch.no_grad():
        return float(model(torch.tensor([enc.input_ids]), labels=torch.tensor([enc.labels])).loss)


# --- the reference's 1e-12 floor ------------------------------------------------------------------

def _sharp_model(scale: float):
    """A random tiny Llama whose LM head is scaled up, so that answer probabilities underflow."""
    model = tiny_model(5)
    with torch.no_grad():
        model.lm_head.weight.mul_(scale)
    return model


def test_floored_gm_by_hand():
    assert floored_gm([1e-30]) == FLOOR and FLOOR == pytest.approx(1e-12, rel=1e-14)
    assert floored_gm([0.0, 1e-4]) == pytest.approx(np.sqrt(1e-12 * 1e-4), rel=1e-12)
    assert floored_gm([0.3]) == pytest.approx(0.3, rel=1e-15)


@pytest.mark.parametrize("scale", [85.0, 200.0])   # some / all answer probabilities below 1e-12
def test_floor_in_paraprob_and_truth_ratio(scale):
    model = _sharp_model(scale)
    keys = ["paraprob", "truth_ratio", "retain_truth_ratio", "ra_q_prob"]
    spec = evaluate(_ctx({"model": model}, SPEC, keys), keys)
    ref = evaluate(_ctx({"model": model}, REFERENCE, keys), keys)
    forget = tiny_splits()["forget"]
    p_para = [np.exp(-_avg_loss(model, it["question"], it["paraphrased_answer"])) for it in forget]
    losses_w = [[_avg_loss(model, it["question"], w) for w in it["perturbed_answers"]] for it in forget]
    assert min(p_para) < 1e-12 and all(p > 0 for p in p_para)
    # spec: unclipped
    assert spec["paraprob"].per_example == pytest.approx(p_para, rel=1e-4)
    p_w = [np.exp(-np.mean(ls)) for ls in losses_w]
    assert spec["truth_ratio"].per_example == pytest.approx([c / (c + w + 1e-10) for c, w in zip(p_para, p_w)],
                                                             rel=1e-4, abs=1e-20)
    # reference: every probability floored at 1e-12 before the (geometric) mean
    floor = lambda ps: float(np.exp(np.mean(np.log([max(p, 1e-12) for p in ps]))))  # noqa: E731
    want_para = [floor([p]) for p in p_para]
    want_w = [floor([np.exp(-l) for l in ls]) for ls in losses_w]
    assert ref["paraprob"].per_example == pytest.approx(want_para, rel=1e-4)
    assert ref["truth_ratio"].per_example == pytest.approx(
        [c / (c + w + 1e-10) for c, w in zip(want_para, want_w)], rel=1e-4)
    for got, p in zip(ref["paraprob"].per_example, p_para):
        if p < 1e-12:
            assert got == FLOOR                    # exactly the floor, where spec keeps p itself
    if scale == 200.0:                             # every probability underflows (published GradDiff rows)
        assert ref["paraprob"].value == pytest.approx(1e-12, rel=1e-12) and spec["paraprob"].value < 1e-20
        tr = FLOOR / (2 * FLOOR + 1e-10)           # 0.0098: the published rows' Truth Ratio ~ 0.0095
        assert ref["truth_ratio"].per_example == [tr] * len(forget) and spec["truth_ratio"].value < 1e-9
        # utility truth ratio (true_better) under the reference: 1 - 1e-12 / (1e-12 + 1e-12) = 0.5
        assert ref["retain_truth_ratio"].value == pytest.approx(1 - FLOOR / (FLOOR + 1e-12), rel=1e-12)
        assert spec["retain_truth_ratio"].value > 0.99          # 1 - p_w / (p_c + 1e-10), p's ~ 1e-28
    # normalised probability: the reference's epsilon is 1e-12 (OU's and the spec's 1e-10)
    ra = tiny_splits()["real_authors"]
    pc = [np.exp(-_avg_loss(model, it["question"], it["answer"])) for it in ra]
    pw = [[np.exp(-_avg_loss(model, it["question"], w)) for w in it["perturbed_answers"]] for it in ra]
    assert ref["ra_q_prob"].per_example == pytest.approx([c / (c + sum(w) + 1e-12) for c, w in zip(pc, pw)],
                                                          rel=1e-4, abs=1e-30)
    assert spec["ra_q_prob"].per_example == pytest.approx([c / (c + sum(w) + 1e-10) for c, w in zip(pc, pw)],
                                                           rel=1e-4, abs=1e-30)


def test_floor_leaves_ordinary_probabilities():
    model = tiny_model(5)   # probabilities ~ 1e-3, far above the floor
    spec = evaluate(_ctx({"model": model}, SPEC, ["paraprob"]), ["paraprob"])["paraprob"]
    ref = evaluate(_ctx({"model": model}, REFERENCE, ["paraprob"]), ["paraprob"])["paraprob"]
    assert ref.per_example == pytest.approx(spec.per_example, rel=1e-13)


# --- bf16 Logit Lens and Fisher under the reference ------------------------------------------------

@pytest.fixture(scope="module")
def bf16_zoo() -> dict:
    return {k: m.to(torch.bfloat16) for k, m in trained_zoo().items()}


def _direct_lens_bf16(source, decoder, items) -> np.ndarray:
    """k[l, i] the reference's way, written out: one item per forward of the source, block l's
    output (hidden_states[l + 1]; the last block's from a hook on the final norm's input), the
    decoder's norm and head, log-softmax in bf16, gather, mean in bf16."""
    n_layers = source.config.num_hidden_layers
    out = np.zeros((n_layers, len(items)))
    for i, it in enumerate(items):
        pre_norm = {}
        hook = source.model.norm.register_forward_hook(lambda m, inp, o: pre_norm.update(h=inp[0]))
        with torch.no_grad():
            hs = source(torch.tensor([it.input_ids]), output_hidden_states=True).hidden_states
        hook.remove()
        pos, tgt = list(it.eval_positions), torch.tensor([it.target_ids])
        for l in range(n_layers):
            h = (hs[l + 1] if l < n_layers - 1 else pre_norm["h"])[0, pos]
            assert h.dtype == torch.bfloat16
            with torch.no_grad():
                logits = decoder.lm_head(decoder.model.norm(h[None]))
                lp = torch.log_softmax(logits, dim=-1)
                assert lp.dtype == torch.bfloat16
                out[l, i] = lp.gather(-1, tgt[..., None]).squeeze(-1).mean().item()
    return out


def test_logit_lens_reference_is_bf16_arithmetic(bf16_zoo):
    roles = {"model": bf16_zoo["tiny:t/unl"], "full": bf16_zoo["tiny:t/full"], "retain": bf16_zoo["tiny:t/retain"]}
    forget = tiny_splits()["forget"]
    ref_ctx = _ctx(roles, REFERENCE, ["logit_lens"], batch_size=1, records=forget)
    spec_ctx = _ctx(roles, SPEC, ["logit_lens"], batch_size=1, records=forget)
    items = ref_ctx.uds_items()[0]
    direct = {r: _direct_lens_bf16(m, roles["full"], items) for r, m in roles.items()}
    for role in roles:
        assert np.array_equal(ref_ctx.lens(role), direct[role])          # bit for bit
        spec_k = spec_ctx.lens(role)                                     # fp32 log-softmax, fp64 mean
        assert not np.array_equal(spec_k, direct[role])
        assert np.abs(spec_k - direct[role]).max() < 0.15                # within bf16 rounding
    got = evaluate(ref_ctx, ["logit_lens"])["logit_lens"]
    want, per_item = logit_lens_score(direct["full"], direct["retain"], direct["model"])
    assert got.value == want and got.per_example == per_item
    assert want is not None and evaluate(spec_ctx, ["logit_lens"])["logit_lens"].value is not None


def test_fisher_mask_reference_is_bf16_arithmetic():
    gen = torch.Generator().manual_seed(0)
    f_ret, f_full, f_unl = (torch.rand(4000, generator=gen).square().to(torch.bfloat16) * 1e-3 for _ in range(3))
    for fraction in (1e-3, 1e-2):
        m = fisher_mask(f_ret, f_full, fraction, model_dtype=True)
        a = torch.clamp(f_ret - f_full, min=0.0)              # bf16, as the reference's tensors
        idx = a.topk(max(1, int(len(a) * fraction))).indices
        assert torch.equal(m.indices, idx)
        assert m.mean_retain == f_ret[idx].mean().item() and m.mean_full == f_full[idx].mean().item()
        excess_unl = m.mean_retain - f_unl[idx].mean().item()
        w = m.mean_retain - m.mean_full
        want = 1.0 - max(0.0, min(1.0, excess_unl / (w + 1e-8)))
        assert fisher_masked_score([m], [f_unl], model_dtype=True) == pytest.approx(want, abs=1e-15)
        spec = fisher_mask(f_ret, f_full, fraction)           # fp32 arithmetic on the same values
        assert (spec.mean_retain, spec.mean_full) != (m.mean_retain, m.mean_full)
        assert spec.mean_retain == pytest.approx(m.mean_retain, rel=1e-2)


def test_fisher_reference_pipeline_on_bf16_models(bf16_zoo):
    roles = {"model": bf16_zoo["tiny:t/unl"], "full": bf16_zoo["tiny:t/full"], "retain": bf16_zoo["tiny:t/retain"]}
    forget = tiny_splits()["forget"]
    key = "fisher_masked_0.01"
    ctx = _ctx(roles, REFERENCE, [key], records=forget)
    got = evaluate(ctx, [key])[key].value
    f = {r: ctx.fisher(r) for r in roles}
    assert all(t.dtype == torch.bfloat16 for t in f["model"])     # accumulated in the model dtype
    masks = [fisher_mask(r, fl, 1e-2, model_dtype=True) for r, fl in zip(f["retain"], f["full"])]
    assert got == fisher_masked_score(masks, f["model"], model_dtype=True)
    spec_ctx = _ctx(roles, SPEC, [key], records=forget)
    assert spec_ctx.fisher("model")[0].dtype == torch.bfloat16
    assert evaluate(spec_ctx, [key])[key].value is not None


# --- Open-Unlearning's attention mask ------------------------------------------------------------

def _direct_stats(model, encs, masker) -> list[tuple[float, list[int]]]:
    """(avg_loss, greedy predictions over A-) per sequence from one right-padded batch whose
    attention mask is `masker(ids, length_mask)`."""
    tok = tiny_tokenizer()
    width = max(len(e.input_ids) for e in encs)
    ids = torch.tensor([list(e.input_ids) + [tok.pad_token_id] * (width - len(e.input_ids)) for e in encs])
    lengths = torch.tensor([[1] * len(e.input_ids) + [0] * (width - len(e.input_ids)) for e in encs])
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=masker(ids, lengths)).logits
    out = []
    for b, e in enumerate(encs):
        labels = torch.tensor(e.labels[1:])
        pos = (labels != -100).nonzero().squeeze(-1)
        lp = torch.log_softmax(logits[b, :len(e.labels) - 1][pos], -1)
        loss = float(-lp.gather(-1, labels[pos][:, None]).mean())
        out.append((loss, lp[:-1].argmax(-1).tolist()))
    return out


def _pad_world() -> dict:
    """The tiny splits plus a forget item whose question holds the pad token inside the text."""
    splits = tiny_splits()
    special = qa_item(7) | {"question": "Where was Karl Bremm <|pad|> born?"}
    return splits | {"forget": splits["forget"] + [special]}


def test_ou_mask_is_input_ids_not_pad():
    tok = tiny_tokenizer()
    assert tok.pad_token_id != tok.eos_token_id
    model = tiny_model(6)
    splits = _pad_world()
    encs = [encode_qa(tok, it["question"], it["answer"]) for it in splits["forget"]]
    assert tok.pad_token_id in encs[-1].input_ids and all(tok.pad_token_id not in e.input_ids for e in encs[:-1])
    assert all(e.input_ids.count(tok.eos_token_id) >= 2 for e in encs)     # eos ends every turn
    n = len(encs)
    got = {mode: [(s.avg_loss, s.preds.tolist()) for s in
                  _ctx({"model": model}, mode, ["prob"], splits, batch_size=n).teacher_forced("model", "forget")
                  .answers()] for mode in (SPEC, OPEN_UNLEARNING)}
    ou = _direct_stats(model, encs, lambda ids, lengths: (ids != tok.pad_token_id).long())
    eos = _direct_stats(model, encs, lambda ids, lengths: lengths * (ids != tok.eos_token_id).long())
    length = _direct_stats(model, encs, lambda ids, lengths: lengths)
    for (g_loss, g_preds), (w_loss, w_preds) in zip(got[OPEN_UNLEARNING], ou):
        assert g_loss == pytest.approx(w_loss, abs=1e-5) and g_preds == w_preds
    for (g_loss, _), (w_loss, _) in zip(got[SPEC], length):
        assert g_loss == pytest.approx(w_loss, abs=1e-5)
    # OU = the default on every item without a pad token, differs on the one with it
    assert [l for l, _ in got[OPEN_UNLEARNING][:-1]] == pytest.approx([l for l, _ in got[SPEC][:-1]], abs=1e-5)
    assert abs(got[OPEN_UNLEARNING][-1][0] - got[SPEC][-1][0]) > 1e-4   # 10x the tolerance above
    # the old eos masking is not OU's mask when pad != eos: it changes every item
    assert all(abs(g[0] - e[0]) > 1e-4 for g, e in zip(got[OPEN_UNLEARNING], eos))


def test_ou_mask_in_generation():
    tok = tiny_tokenizer()
    model = tiny_model(6)
    spec_ctx, ou_ctx = (_ctx({"model": model}, m, ["rouge"]) for m in (SPEC, OPEN_UNLEARNING))
    # pad != eos and no pad in the prompts: OU's mask is the length mask
    assert [g.ids for g in ou_ctx.generations("model", "forget")] == \
           [g.ids for g in spec_ctx.generations("model", "forget")]
    # a prompt holding the pad token: OU's context generates with that id masked, as a direct
    # call with mask_id does, and the mask is `ids != pad` on real tokens
    world = _pad_world()
    prompts = [generation_prompt(tok, it["question"]) for it in world["forget"]]
    assert tok.pad_token_id in prompts[-1] and tok.pad_token_id != tok.eos_token_id
    ou_pad = _ctx({"model": model}, OPEN_UNLEARNING, ["rouge"], splits=world)
    s = ou_pad.settings
    direct = greedy_generate(model, tok, prompts, GenOptions(s.batch_size, s.max_new_tokens, mask_id=tok.pad_token_id,
                                                                    progress=False))
    assert [g.ids for g in ou_pad.generations("model", "forget")] == [g.ids for g in direct]
    ids = torch.tensor([[5, tok.pad_token_id, 7, tok.pad_token_id]])
    assert attention_mask(ids, torch.tensor([[1, 1, 1, 0]]), tok.pad_token_id).tolist() == [[1, 0, 1, 0]]


# --- Open-Unlearning's model-utility mean --------------------------------------------------------

def test_ou_model_utility_is_scipy_hmean():
    from scipy.stats import hmean

    values = dict(zip(UTILITY_KEYS, (0.9, 0.5, 0.3, 0.7, 0.25, 0.6, 0.8, 0.4, 0.35)))
    assert model_utility(values, open_unlearning=True) == pytest.approx(float(hmean(list(values.values()))),
                                                                        rel=1e-15)
    assert model_utility(values) == pytest.approx(9 / sum(1 / (v + 1e-12) for v in values.values()), rel=1e-15)
    assert model_utility(values | {"wf_q_rouge": 0.0}, open_unlearning=True) == 0.0
    assert model_utility(values | {"wf_q_rouge": 0.0}) == pytest.approx(9e-12, rel=1e-6)
    assert harmonic_mean_ou([0.5, None]) is None


# --- flags, aliases and the measurement stamp ----------------------------------------------------

def test_aliases():
    assert resolve_alias(None, False, "--ou-attention-mask", OPEN_UNLEARNING) == SPEC
    assert resolve_alias(None, True, "--ou-attention-mask", OPEN_UNLEARNING) == OPEN_UNLEARNING
    assert resolve_alias(OPEN_UNLEARNING, True, "--ou-attention-mask", OPEN_UNLEARNING) == OPEN_UNLEARNING
    assert resolve_alias(REFERENCE, False, "--reference-last-layer", REFERENCE) == REFERENCE
    with pytest.raises(UdsInputError, match="contradicts --parity reference"):
        resolve_alias(REFERENCE, True, "--ou-attention-mask", OPEN_UNLEARNING)
    with pytest.raises(UdsInputError, match="unknown parity"):
        resolve_alias("ou", False, "--ou-attention-mask", OPEN_UNLEARNING)


def test_stamp_keeps_spec_caches_and_separates_modes():
    from meta_eval.measure import stamp_settings

    s = EvalSettings(batch_size=16, system_prompt=None, device="cpu", progress=False)
    # the stamp's settings before parity modes and the fast paths existed: every field but progress,
    # ou_attention_mask False
    legacy = ({k: v for k, v in asdict(s).items() if k not in ("progress", "parity", "fast")}
              | {"ou_attention_mask": False})
    assert stamp_settings(s) == legacy
    assert stamp_settings(replace(s, fast=False)) == legacy   # both paths give the same values
    stamps = [stamp_settings(EvalSettings(batch_size=16, device="cpu", parity=m)) for m in MODES]
    assert len({repr(sorted(x.items())) for x in stamps}) == 3
