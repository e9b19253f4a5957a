"""`uds probe`: verbatim vs semantic memorisation of documents (spec-probes §2).

A prompt ladder (weak, medium, strong, prefix), greedy + low-temperature samples, character-level
LCS matching with distractor attribution, refusal re-probing. Writes `DIR/summary.json`
({"models": {SPEC: {"levels": {LEVEL: {verbatim_rate, semantic_acc, refusal_rate, n, ...}},
"masked_by_refusal", "distractors", "split_2x2", "documents", ...}}, "settings"}), `DIR/rows.jsonl`
(one row per model x passage x level x sample) and `DIR/heatmap.png` (one panel per model).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from tqdm.auto import tqdm

from uds_core.errors import UdsInputError
from uds.probe_passages import is_passage_corpus, run_passages, write_summary
from uds.device_args import add_device_args, device_and_dtype

DEFAULT_OUT = Path("out") / "probe"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("probe", help="verbatim vs semantic memorisation probe (spec-probes §2)",
                              description=__doc__.splitlines()[0])
    p.add_argument("--model", action="append", required=True, metavar="SPEC",
                   help="checkpoint spec; repeat for a side-by-side comparison")
    p.add_argument("--corpus", help="JSONL of passages, tiny:<preset>, or passages[:tiny:<preset>] (long "
                   "passages of the forget authors) (default: the first tiny model's world's QA)")
    p.add_argument("--passage-sentences", type=int, default=3,
                   help="--corpus passages: sentences per passage (a one-sentence remainder joins the last)")
    p.add_argument("--passage-source", choices=("answers", "bios"), default="answers",
                   help="--corpus passages: forget answers joined in item order (what full trained on), or "
                   "the forget biographies in the sentence chunks the pos_bio pool model trained on")
    p.add_argument("--levels", default="weak,medium,strong,prefix", help="comma-separated ladder levels")
    p.add_argument("--samples", type=int, default=5, help="sampled outputs per prompt besides the greedy one")
    p.add_argument("--temperature", type=float, default=0.3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--min-lcs", type=int, default=50, help="characters of common substring for a verbatim hit")
    p.add_argument("--prefix-words", type=int, default=10)
    p.add_argument("--lowercase", action="store_true", help="lower-case both sides before matching")
    p.add_argument("--refusal-phrases", metavar="FILE", help="one refusal phrase a line (default: built-in list)")
    p.add_argument("--targets-only", action="store_true", help="do not probe distractor passages")
    p.add_argument("--distractors", type=int, help="tiny corpus: at most this many distractor documents")
    p.add_argument("--out", help=f"output folder (default: {DEFAULT_OUT})")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--system-prompt", help="system turn of the chat levels (default: none)")
    add_device_args(p)
    p.set_defaults(func=run)


def _check(args: argparse.Namespace) -> None:
    for name, low in (("min_lcs", 1), ("samples", 0), ("prefix_words", 1), ("batch_size", 1), ("max_new_tokens", 1)):
        if getattr(args, name) < low:
            raise UdsInputError(f"--{name.replace('_', '-')} must be at least {low} (got {getattr(args, name)})")
    if not args.temperature > 0:
        raise UdsInputError(f"--temperature must be positive (got {args.temperature})")


def load_corpus(text: str | None, models: list[str], distractors: int | None):
    """Passages of `--corpus`: a JSONL file, `tiny:<preset>`, or (unset) the first tiny model's world."""
    from checkpoints.specs import parse_tiny, parse_tiny_zoo
    from uds_analyses.probe.corpus import read_corpus, world_corpus

    def load_world(preset: str, seed: int):
        # imported only here: the world store pulls in heavy libraries a JSONL corpus never needs
        from checkpoints.world.store import load_world as load

        return load(preset, seed)

    if text is None:
        tiny = [m for m in models if m.startswith("tiny:")]
        if not tiny:
            raise UdsInputError("--corpus is required unless a --model is a tiny-world model")
        preset, seed, _ = parse_tiny(tiny[0])
        return world_corpus(load_world(preset, seed), distractors), f"tiny:{preset}"
    zoo = parse_tiny_zoo(text)
    if zoo:
        return world_corpus(load_world(*zoo), distractors), text
    return read_corpus(text), text


def run(args: argparse.Namespace) -> int:
    from metrics.session import EvalSession, Placement
    from uds_analyses.probe.ladder import parse_levels
    from uds_analyses.probe.refusal import RefusalDetector, default_phrases, read_phrases
    from uds_analyses.probe.run import ProbeSettings, probe_model
    from uds_analyses.probe.summary import heat, model_summary
    from uds_analyses.probe.plots import heatmap_png

    levels = parse_levels(args.levels)
    _check(args)
    device, dtype = device_and_dtype(args)
    # every spec resolved before any model work (a bad one fails first)
    sessions = {m: EvalSession(m, references=False, placement=Placement(device, dtype)) for m in args.model}
    phrases = read_phrases(args.refusal_phrases) if args.refusal_phrases else default_phrases()
    s = ProbeSettings(levels=tuple(levels), samples=args.samples, temperature=args.temperature, seed=args.seed,
                      min_lcs=args.min_lcs, prefix_words=args.prefix_words, lower=args.lowercase,
                      batch_size=args.batch_size, max_new_tokens=args.max_new_tokens,
                      probe_distractors=not args.targets_only, system_prompt=args.system_prompt, device=device)
    out = Path(args.out) if args.out else DEFAULT_OUT
    if is_passage_corpus(args.corpus):
        if args.passage_sentences < 2:
            raise UdsInputError(f"--passage-sentences must be at least 2 (got {args.passage_sentences})")
        out.mkdir(parents=True, exist_ok=True)
        return run_passages(args, sessions, phrases, s, levels, out)
    passages, corpus_name = load_corpus(args.corpus, args.model, args.distractors)
    out.mkdir(parents=True, exist_ok=True)
    summary, panels, seconds = {}, [], {}
    with (out / "rows.jsonl").open("w") as fh:
        for spec in tqdm(args.model, desc="probe models"):
            t0 = time.time()
            session = sessions[spec]
            rows = probe_model(session.load_uncached(spec), session.tokenizer(spec), passages, s,
                               RefusalDetector(phrases), desc=spec)
            seconds[spec] = round(time.time() - t0, 1)
            for r in rows:
                fh.write(json.dumps({"model": spec, **r}, ensure_ascii=False) + "\n")
            summary[spec] = model_summary(rows, levels)
            docs, pos, rates = heat(rows, levels[-1])
            group = {p.doc_id: p.label for p in passages}
            panels.append((spec, docs, pos, rates, [group[d] for d in docs]))
    heatmap_png(panels, levels[-1], out / "heatmap.png")
    settings = {"corpus": corpus_name, "n_passages": len(passages),
                "n_target_passages": sum(p.target for p in passages), "levels": levels, "samples": s.samples,
                "temperature": s.temperature, "seed": s.seed, "min_lcs": s.min_lcs, "prefix_words": s.prefix_words,
                "lowercase": s.lower, "templates": s.templates, "batch_size": s.batch_size,
                "max_new_tokens": s.max_new_tokens, "probe_distractors": s.probe_distractors,
                "n_refusal_phrases": len(phrases), "device": device, "dtype": str(dtype).replace("torch.", ""),
                "seconds": seconds}
    return write_summary(out, summary, settings, lambda block: block["levels"][levels[-1]]["semantic_acc"])
