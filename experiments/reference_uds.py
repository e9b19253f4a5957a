"""Run the reference UDS implementation (`gnueaj/unlearning-depth-score`, its own `compute_uds.py`)
on local model folders, or ask it for its prompts and entity spans: a child process of
experiments/llama1b.py, with the reference checkout first on sys.path (it has a package named
`uds` too, so nothing of this project is imported here).

    python experiments/reference_uds.py --repo CHECKOUT spans --tokenizer DIR --data FILE --out FILE
    python experiments/reference_uds.py --repo CHECKOUT score --full DIR --retain DIR --unlearned DIR \\
        --data FILE --n-examples 50 --batch-size 8 --dtype float32 --out FILE [--share-unmoved SUFFIXES]

`spans`: for every annotated record, the reference's prompt, reference text (its
`normalize_reference_for_eval`), eval span (`get_eval_span`) and input ids (`build_logprob_ctx`).
`score`: `_run_s1_s2_side_by_side_logprob_batch` (the function its CLI calls; per-item 30-token
generations of retain and unlearned included, as the CLI does) timed, and per example its UDS,
full score, S1/S2 deltas, eval span. `--share-unmoved`: retain and unlearned hold the full model's
tensors for every parameter not ending in one of these suffixes, after checking that their files
hold exactly those values (three float32 1B models need 15 GB; the llama1b world's copies differ
from full in o_proj and down_proj only), so the reference's three models fit in 7.6 GB.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path


def load(folder: str, dtype: str, device: str = "cpu"):
    from uds.models import load_model   # the reference's loader

    return load_model(folder, dtype=dtype, device_map=device)


def sharing_copy(full, folder: str, moved: tuple[str, ...]):
    """A copy of `full` sharing every tensor but those named by `moved`, which are read from
    `folder`'s safetensors files; checks that the shared ones equal the folder's."""
    import torch
    from safetensors import safe_open

    memo = {id(p): p for name, p in full.named_parameters() if not name.endswith(moved)}
    out = copy.deepcopy(full, memo)
    params = dict(out.named_parameters())
    dtype = next(full.parameters()).dtype
    seen = set()
    for path in sorted(Path(folder).glob("*.safetensors")):
        with safe_open(str(path), "pt") as f:
            for name in f.keys():
                stored = f.get_tensor(name).to(dtype)
                seen.add(name)
                if name.endswith(moved):
                    params[name].data.copy_(stored)
                elif not torch.equal(params[name].data, stored):
                    raise SystemExit(f"{folder}: {name} differs from full's; --share-unmoved does not apply")
    missing = {n for n in params if n not in seen and n != "lm_head.weight"}
    if missing:
        raise SystemExit(f"{folder}: no stored tensor for {sorted(missing)[:3]}")
    return out


def spans(args: argparse.Namespace) -> None:
    import compute_uds as ref
    from uds.models import load_tokenizer

    tok = load_tokenizer(args.tokenizer)
    rows = []
    for item in json.loads(Path(args.data).read_text()):
        prompt = f"Question: {item['question']}\nAnswer: {item['prefix']}"
        answer = item["answer"]
        if answer.startswith(item["prefix"]):
            answer = answer[len(item["prefix"]):]
        reference = ref.normalize_reference_for_eval(prompt, answer)
        span = ref.get_eval_span(tok, reference, item.get("gt_entity", item["entity"]), "entity")
        ctx = ref.build_logprob_ctx(tok, prompt, reference, span, "span") if span is not None else None
        rows.append({"idx": item["idx"], "prompt": prompt, "reference": reference,
                     "eval_span": list(span) if span is not None else None,
                     "prompt_ids": ctx["prompt_ids"] if ctx else None, "ref_ids": ctx["ref_ids"] if ctx else None,
                     "eval_start": ctx["eval_start"] if ctx else None, "eval_end": ctx["eval_end"] if ctx else None})
    Path(args.out).write_text(json.dumps({"rows": rows}) + "\n")


def score(args: argparse.Namespace) -> None:
    import torch

    import compute_uds as ref

    torch.manual_seed(42)
    from uds.models import load_tokenizer

    t_load = time.time()
    tok = load_tokenizer(args.full)
    full = load(args.full, args.dtype, args.device)
    moved = tuple(args.share_unmoved.split(",")) if args.share_unmoved else ()
    retain = sharing_copy(full, args.retain, moved) if moved else load(args.retain, args.dtype, args.device)
    unlearned = sharing_copy(full, args.unlearned, moved) if moved else load(args.unlearned, args.dtype, args.device)
    load_s = time.time() - t_load
    data = json.loads(Path(args.data).read_text())[:args.n_examples]
    layers = list(range(ref.get_num_layers(full)))
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    sync()
    t0 = time.time()
    results, avg, skipped, _, _ = ref._run_s1_s2_side_by_side_logprob_batch(
        retain, unlearned, full, tok, data, layers, unlearn_name="unlearned", delta_threshold=0.05,
        patch_scope="span", batch_size=args.batch_size)
    sync()
    seconds = time.time() - t0
    keep = ("idx", "uds", "full_score", "s1_deltas", "s2_deltas", "eval_span", "ft_layers")
    Path(args.out).write_text(json.dumps({
        "avg_uds": avg, "skipped": skipped, "seconds": seconds, "load_seconds": load_s,
        "torch_threads": torch.get_num_threads(), "batch_size": args.batch_size, "dtype": args.dtype,
        "examples": [{k: r[k] for k in keep} for r in results]}) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repo", required=True, help="a checkout of the reference repository")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("spans")
    s.add_argument("--tokenizer", required=True)
    s.add_argument("--data", required=True)
    s.add_argument("--out", required=True)
    c = sub.add_parser("score")
    for name in ("--full", "--retain", "--unlearned", "--data", "--out"):
        c.add_argument(name, required=True)
    c.add_argument("--n-examples", type=int, default=50)
    c.add_argument("--batch-size", type=int, default=8)
    c.add_argument("--dtype", default="float32")
    c.add_argument("--device", default="cpu", help="the reference's device_map (cpu, cuda)")
    c.add_argument("--share-unmoved", default="")
    c.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    sys.path.insert(0, str(Path(args.repo).resolve()))
    if args.cmd == "score":
        import torch

        torch.set_num_threads(args.threads)
    {"spans": spans, "score": score}[args.cmd](args)


if __name__ == "__main__":
    main()
