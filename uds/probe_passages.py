"""`uds probe --corpus passages[:tiny:<preset>]`: the ladder on a tiny world's long passages.

`--passage-source answers` (default): each forget author's answers joined in item order, cut into
passages of `--passage-sentences`; `bios`: the forget biographies, cut into the sentence chunks
the `pos_bio` pool model trained on (`uds_analyses.probe.passages`).

Writes `DIR/summary.json` ({"models": {SPEC: {"levels", "distractors", "semantic_acc",
"by_position", "by_start", "first_words", "split_2x2_prefix", ...}}, "settings"}), `DIR/rows.jsonl` (ladder rows, then
QA rows with `"qa": true`) and `DIR/heatmap.png` (authors x passage position at the top level).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from tqdm.auto import tqdm

from uds_core.errors import UdsInputError

PREFIX = "passages"


def is_passage_corpus(text: str | None) -> bool:
    return text is not None and (text == PREFIX or text.startswith(PREFIX + ":"))


def load_passages(text: str, models: list[str], distractors: int | None, size: int, source: str = "answers"):
    """(passages, corpus name) of `passages` (the first tiny model's world) or `passages:tiny:<preset>`."""
    from checkpoints.specs import parse_tiny, parse_tiny_zoo
    from checkpoints.world.store import ensure_tokenizer, load_world
    from uds_analyses.probe.passages import bio_passages, world_passages

    rest = text[len(PREFIX) + 1:]
    if rest:
        world = parse_tiny_zoo(rest)
        if not world:
            raise UdsInputError(f"--corpus {text!r}: expected passages or passages:tiny:<preset>")
    else:
        tiny = [m for m in models if m.startswith("tiny:")]
        if not tiny:
            raise UdsInputError("--corpus passages needs a tiny-world --model (or passages:tiny:<preset>)")
        world = parse_tiny(tiny[0])[:2]
    name = f"{PREFIX}:tiny:{world[0]}" + ("" if source == "answers" else f" ({source})")
    if source == "bios":
        from checkpoints.methods.pools import sentence_chunks

        tok = ensure_tokenizer(*world)
        return bio_passages(load_world(*world), lambda text: sentence_chunks(tok, text), distractors), name
    return world_passages(load_world(*world), size, distractors), name


def run_passages(args: argparse.Namespace, sessions: dict, phrases: list[str], s, levels: list[str],
                 out: Path) -> int:
    """Probe every model on the passage corpus and write the files above."""
    from uds_analyses.probe.passage_run import probe_passages
    from uds_analyses.probe.passage_summary import passages_summary
    from uds_analyses.probe.plots import heatmap_png
    from uds_analyses.probe.refusal import RefusalDetector
    from uds_analyses.probe.summary import heat

    passages, name = load_passages(args.corpus, args.model, args.distractors, args.passage_sentences,
                                   args.passage_source)
    summary, panels, seconds, counts = {}, [], {}, {}
    with (out / "rows.jsonl").open("w") as fh:
        for spec in tqdm(args.model, desc="probe models"):
            t0 = time.time()
            session = sessions[spec]
            rows, qa = probe_passages(session.load_uncached(spec), session.tokenizer(spec), passages, s,
                                      RefusalDetector(phrases), desc=spec)
            seconds[spec], counts[spec] = round(time.time() - t0, 1), len(rows)
            for r in rows:
                fh.write(json.dumps({"model": spec, **r}, ensure_ascii=False) + "\n")
            for q in qa:
                fh.write(json.dumps({"model": spec, "qa": True, **q}, ensure_ascii=False) + "\n")
            summary[spec] = passages_summary(rows, qa, levels)
            # the heatmap shows the sentence-boundary cuts, the rates the tables report
            docs, pos, rates = heat([r for r in rows if r["cut"] != "words"], levels[-1])
            group = {p.doc_id: p.group for p in passages}
            panels.append((spec, docs, pos, rates, [group[d] for d in docs]))
    heatmap_png(panels, levels[-1], out / "heatmap.png")
    settings = {"corpus": name, "passage_source": args.passage_source, "passage_sentences": args.passage_sentences,
                "n_passages": len(passages),
                "n_target_passages": sum(p.target for p in passages),
                "sentences_per_target_passage": [len(p.sentences) for p in passages if p.target],
                "levels": levels, "samples": s.samples, "temperature": s.temperature, "seed": s.seed,
                "min_lcs": s.min_lcs, "lowercase": s.lower, "templates": s.templates, "batch_size": s.batch_size,
                "max_new_tokens": s.max_new_tokens, "probe_distractors": s.probe_distractors,
                "n_refusal_phrases": len(phrases), "device": s.device, "seconds": seconds, "rows": counts}
    return write_summary(out, summary, settings, lambda block: block["semantic_acc"])


def write_summary(out: Path, summary: dict, settings: dict, semantic) -> int:
    """`summary.json` of a probe run, and one line per model: verbatim rate per level, and
    `semantic(block)` (where the corpus keeps its semantic accuracy differs: QA vs passages)."""
    (out / "summary.json").write_text(json.dumps({"models": summary, "settings": settings}, indent=1))
    for spec, block in summary.items():
        line = ", ".join(f"{lv} {v['verbatim_rate']:.2f}" for lv, v in block["levels"].items()
                         if v["verbatim_rate"] is not None)
        print(f"{spec}: verbatim {line}; semantic {semantic(block)}")
    print(out / "summary.json")
    return 0
