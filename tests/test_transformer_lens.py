"""UDS through TransformerLens, an implementation that shares none of the engine's code, against
`uds score` on the tiny `test` world: per example and per layer, max |delta UDS| <= 1e-5 (float32).

Everything on the TransformerLens side is written here from spec §2.1-2.5: the raw prompt and
continuation, the entity span from the tokenizer's offsets, the teacher-forced entity log-prob,
`blocks.{l}.hook_resid_post` patched with `run_with_hooks` at the entity positions, the S1/S2
deltas, the KE layers and UDS. One example per forward pass (no padding), eager attention
(TransformerLens forces it); the engine runs batches of 4, right-padded, through its fast path.

TransformerLens 4.x boots a local Hugging Face folder offline with `TransformerBridge.boot_transformers`
(HookedTransformer was removed in 4.0). Three loadings are compared, and for a Llama all three
give the HF block output as `hook_resid_post` (max differences printed):
- "raw": the bridge as booted, Hugging Face weights untouched;
- "no_processing": `enable_compatibility_mode(no_processing=True)` (= fold_ln, center_writing_weights,
  center_unembed, fold_value_biases all False): legacy hook names, weights untouched;
- "processed": `enable_compatibility_mode()` with HookedTransformer's defaults (fold_ln,
  center_writing_weights, center_unembed, fold_value_biases True). RMSNorm has no mean to
  remove, so TransformerLens centres no writing weights and folding the norm scales into the next
  linears leaves the residual stream as it is; center_unembed shifts every position's logits by
  a constant, which the log-softmax removes: the logits differ, the log-probs and UDS do not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

tl = pytest.importorskip("transformer_lens", reason="transformer-lens is not installed (extra uds[tl])")

from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from tests.engine_fixtures import world_examples_file  # noqa: E402
from uds.cli import main  # noqa: E402

# Tiny models on a shared 2-core machine: one intra-op thread (as tests/engine_fixtures.py sets).
torch.set_num_threads(1)

N_EXAMPLES = 6
TAU = 0.05
MODES = {"raw": None, "no_processing": {"no_processing": True}, "processed": {}}


# --- spec §2.1-2.5, written out for TransformerLens ------------------------------------------

def spec_input(record: dict, tok) -> tuple[list[int], list[int], list[int]] | None:
    """(input ids, positions scored and patched, entity ids), or None when the entity is not in
    the continuation (the engine skips such an item)."""
    prompt = f"Question: {record['question']}\nAnswer: {record['prefix']}"
    answer, prefix = record["answer"], record["prefix"]
    reference = answer[len(prefix):] if answer.startswith(prefix) else answer
    if reference and not reference[0].isspace() and not prompt[-1].isspace():
        reference = " " + reference
    prompt_ids = tok(prompt, add_special_tokens=True)["input_ids"]
    enc = tok(reference, add_special_tokens=False, return_offsets_mapping=True)
    entity = record["entity"]
    for candidate in (entity, entity.strip(), " " + entity):
        c0 = reference.find(candidate)
        if c0 >= 0:
            break
    else:
        return None
    c1 = c0 + len(candidate)
    span = [i for i, (a, b) in enumerate(enc["offset_mapping"]) if b > c0 and a < c1]
    ids = prompt_ids + enc["input_ids"]
    positions = [len(prompt_ids) - 1 + i for i in range(span[0], span[-1] + 1)]
    return ids, positions, [ids[p + 1] for p in positions]


def entity_logprob(logits: torch.Tensor, positions: list[int], targets: list[int]) -> float:
    """Mean over entity tokens of log softmax(logits[p])[y]; logits (1, T, V)."""
    logp = torch.log_softmax(logits[0, positions].double(), dim=-1)
    return logp[torch.arange(len(targets)), targets].mean().item()


def resid_posts(bridge, ids: torch.Tensor, n_layers: int) -> list[torch.Tensor]:
    """`blocks.{l}.hook_resid_post` of every layer, (1, T, H) each."""
    _, cache = bridge.run_with_cache(ids, names_filter=lambda name: name.endswith("hook_resid_post"))
    return [cache[f"blocks.{l}.hook_resid_post"] for l in range(n_layers)]


def patched_logprob(bridge, ids: torch.Tensor, layer: int, source: torch.Tensor, positions: list[int],
                    targets: list[int]) -> float:
    def patch(resid: torch.Tensor, hook) -> torch.Tensor:
        resid = resid.clone()
        resid[:, positions] = source[:, positions].to(resid.dtype)
        return resid
    logits = bridge.run_with_hooks(ids, fwd_hooks=[(f"blocks.{layer}.hook_resid_post", patch)])
    return entity_logprob(logits, positions, targets)


def uds_of(d1: list[float], d2: list[float]) -> float | None:
    """spec §2.5: S1-weighted mean of clip(d2/d1, 0, 1) over the layers with d1 > tau."""
    ke = [l for l, d in enumerate(d1) if d > TAU]
    if not ke:
        return None
    return sum(d1[l] * min(max(d2[l] / d1[l], 0.0), 1.0) for l in ke) / sum(d1[l] for l in ke)


@torch.no_grad()
def tl_uds(bridges: dict, tok, records: list[dict]) -> list[dict]:
    """Per example: idx, s1_delta, s2_delta (per layer), uds, through TransformerLens."""
    full = bridges["full"]
    n_layers = full.cfg.n_layers
    rows = []
    for rec in records:
        prepared = spec_input(rec, tok)
        if prepared is None:
            continue
        ids, positions, targets = prepared
        x = torch.tensor([ids])
        base = entity_logprob(full(x, return_type="logits"), positions, targets)
        deltas = {}
        for stage in ("retain", "unlearned"):
            states = resid_posts(bridges[stage], x, n_layers)
            deltas[stage] = [base - patched_logprob(full, x, l, states[l], positions, targets) for l in range(n_layers)]
        rows.append({"idx": rec["idx"], "s1_delta": deltas["retain"], "s2_delta": deltas["unlearned"],
                     "uds": uds_of(deltas["retain"], deltas["unlearned"])})
    return rows


# --- the comparison ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def models(test_world: Path, tmp_path_factory) -> dict[str, Path]:
    """full, retain and an "unlearned" model halfway between them (weights averaged), and data."""
    root = tmp_path_factory.mktemp("tl")
    folders = {"full": test_world / "models" / "full", "retain": test_world / "models" / "retain"}
    full = AutoModelForCausalLM.from_pretrained(folders["full"])
    retain = AutoModelForCausalLM.from_pretrained(folders["retain"]).state_dict()
    full.load_state_dict({k: 0.5 * v + 0.5 * retain[k] for k, v in full.state_dict().items()})
    full.save_pretrained(root / "half")
    folders["unlearned"] = root / "half"
    folders["data"] = world_examples_file(test_world, N_EXAMPLES, root / "data.json")
    return folders


@pytest.fixture(scope="module")
def engine(models: dict, tmp_path_factory) -> list[dict]:
    """`uds score`'s examples.jsonl rows for the three models (float32, batches of 4)."""
    out = tmp_path_factory.mktemp("engine")
    rc = main(["score", "--unlearned", str(models["unlearned"]), "--full", str(models["full"]),
               "--retain", str(models["retain"]), "--data", str(models["data"]), "--device", "cpu",
               "--dtype", "float32", "--batch-size", "4", "--no-s1-cache", "--out", str(out)])
    assert rc == 0
    return [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]


def boot(folder: Path, tok, mode: dict | None):
    from transformer_lens import TransformerBridge

    bridge = TransformerBridge.boot_transformers(str(folder), tokenizer=tok, device="cpu", dtype=torch.float32)
    if mode is not None:
        bridge.enable_compatibility_mode(disable_warnings=True, **mode)
    return bridge.eval()


@torch.no_grad()
def gaps_to_hf(bridge, hf_model, ids: torch.Tensor) -> dict[str, float]:
    """max |TransformerLens - Hugging Face| of the block outputs (`hook_resid_post`), the logits
    and the log-probs, over layers, positions and the vocabulary."""
    outputs = []
    handles = [layer.register_forward_hook(lambda m, i, o: outputs.append(o[0] if isinstance(o, tuple) else o))
               for layer in hf_model.model.layers]
    hf_logits = hf_model(ids).logits
    for h in handles:
        h.remove()
    ours = resid_posts(bridge, ids, len(outputs))
    logits = bridge(ids, return_type="logits")
    return {"resid": max((a - b).abs().max().item() for a, b in zip(ours, outputs)),
            "logits": (logits - hf_logits).abs().max().item(),
            "logprobs": (logits.log_softmax(-1) - hf_logits.log_softmax(-1)).abs().max().item()}


def max_gaps(engine: list[dict], lens: list[dict]) -> dict[str, float]:
    by_idx = {r["idx"]: r for r in engine}
    gaps = {"uds": 0.0, "s1_delta": 0.0, "s2_delta": 0.0}
    for row in lens:
        ref = by_idx[row["idx"]]
        assert (ref["uds"] is None) == (row["uds"] is None), row["idx"]
        if row["uds"] is not None:
            gaps["uds"] = max(gaps["uds"], abs(ref["uds"] - row["uds"]))
        for key in ("s1_delta", "s2_delta"):
            gaps[key] = max([gaps[key]] + [abs(a - b) for a, b in zip(ref[key], row[key])])
    return gaps


@pytest.mark.parametrize("mode", list(MODES))
def test_transformer_lens_uds_matches_the_engine(models, engine, mode, capsys):
    tok = AutoTokenizer.from_pretrained(models["full"])
    records = json.loads(models["data"].read_text())
    bridges = {role: boot(models[role], tok, MODES[mode]) for role in ("full", "retain", "unlearned")}
    lens = tl_uds(bridges, tok, records)
    assert len(lens) == len([r for r in engine if r["skipped_reason"] is None]) >= N_EXAMPLES - 1
    assert any(r["uds"] is not None and 0.05 < r["uds"] < 0.95 for r in lens)   # not a trivial 0 or 1
    hf_full = AutoModelForCausalLM.from_pretrained(models["full"], attn_implementation="eager").eval()
    hf = gaps_to_hf(bridges["full"], hf_full, torch.tensor([spec_input(records[0], tok)[0]]))
    gaps = max_gaps(engine, lens)
    report = (f"TransformerLens ({mode}) vs engine over {len(lens)} examples x {bridges['full'].cfg.n_layers} layers: "
              f"max |dUDS| {gaps['uds']:.2e}, max |dS1| {gaps['s1_delta']:.2e}, max |dS2| {gaps['s2_delta']:.2e}; "
              f"max |resid_post - HF block output| {hf['resid']:.2e}, "
              f"|logits - HF| {hf['logits']:.2e}, |log-probs - HF| {hf['logprobs']:.2e}")
    with capsys.disabled():   # shown under `pytest -q` too (CI), not only with -s
        print(f"\n{report}")
    assert hf["resid"] <= 1e-5 and hf["logprobs"] <= 1e-4, report
    assert gaps["uds"] <= 1e-5 and gaps["s1_delta"] <= 1e-4 and gaps["s2_delta"] <= 1e-4, report
