"""Running the probe on one model: batched generation per level, matching, refusals (spec-probes §2.3-2.5).

For every probed passage and level: the greedy output (sample 0) and `samples` outputs at a low
temperature (samples 1..k), all prompts of a level generated in batches. Passages with QA are
also asked their question (chat, the same greedy + k samples) for the semantic side. A passage
refused at the strongest requested level is re-asked at the next level up the ladder (rows with
`reprobe: true`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import torch
from transformers import PreTrainedTokenizerBase

from checkpoints.world.matching import entity_hit
from uds_analyses.probe.corpus import Passage
from uds_analyses.probe.ladder import LEVELS, PREFIX_WORDS, TEMPLATES, Probe, build_probe, stronger
from uds_analyses.probe.matching import MIN_LCS, PassageIndex, hit_bar, canonical_text
from uds_analyses.probe.refusal import RefusalDetector
from uds_core.chat import chat_prompt_ids
from uds_core.gen_options import GenOptions
from uds_core.generation import Generation, greedy_generate, sampled_generate


@dataclass(frozen=True)
class ProbeSettings:
    levels: tuple[str, ...] = LEVELS
    samples: int = 5                  # sampled outputs per prompt, besides the greedy one
    temperature: float = 0.3
    seed: int = 0
    min_lcs: int = MIN_LCS            # characters
    prefix_words: int = PREFIX_WORDS
    lower: bool = False               # lower-case both sides before matching
    batch_size: int = 32
    max_new_tokens: int = 256         # cap; each level asks for its longest expected text + 8 tokens
    probe_distractors: bool = True    # probe distractor passages too (their rates are the baseline)
    system_prompt: str | None = None
    templates: dict = field(default_factory=lambda: dict(TEMPLATES))
    device: str = "cpu"
    progress: bool = True


def _outputs(model: torch.nn.Module, tok: PreTrainedTokenizerBase, prompts: list[list[int]], max_new: int,
             s: ProbeSettings, desc: str) -> list[list[Generation]]:
    """[prompt][sample]: greedy first, then `s.samples` seeded samples."""
    opts = GenOptions(s.batch_size, max_new, s.device, progress=s.progress)
    greedy = greedy_generate(model, tok, prompts, replace(opts, desc=f"{desc} greedy"))
    if s.samples < 1:
        return [[g] for g in greedy]
    sampled = sampled_generate(model, tok, prompts, replace(opts, desc=f"{desc} sampled"), num_samples=s.samples,
                               temperature=s.temperature, seed=s.seed)
    return [[g, *rest] for g, rest in zip(greedy, sampled)]


def _budget(tok: PreTrainedTokenizerBase, texts: Sequence[str], cap: int) -> int:
    """New tokens enough for the longest expected text (+ 8), at most `cap`."""
    longest = max((len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts), default=0)
    return max(1, min(cap, longest + 8))


def semantic_hits(model: torch.nn.Module, tok: PreTrainedTokenizerBase, passages: Sequence[Passage],
                  s: ProbeSettings, desc: str = "qa") -> dict[int, list[tuple[str, bool]]]:
    """passage index -> [(answer text, gold found)] per sample, for passages with a question."""
    asked = [i for i, p in enumerate(passages) if p.question and p.gold]
    if not asked:
        return {}
    prompts = [chat_prompt_ids(tok, passages[i].question, s.system_prompt) for i in asked]
    budget = _budget(tok, [passages[i].answer or passages[i].gold for i in asked], s.max_new_tokens)
    outs = _outputs(model, tok, prompts, budget, s, desc)
    return {i: [(g.text, entity_hit(g.text, passages[i].gold)) for g in gens] for i, gens in zip(asked, outs)}


def _level_rows(model, tok, passages: Sequence[Passage], chosen: list[int], level: str, index: PassageIndex,
                s: ProbeSettings, refusal: RefusalDetector, reprobe: bool, desc: str) -> list[dict]:
    probes: list[Probe] = [build_probe(tok, passages[i], level, s.templates, s.prefix_words, s.system_prompt)
                           for i in chosen]
    outs = _outputs(model, tok, [p.ids for p in probes], _budget(tok, [p.expected for p in probes],
                                                                 s.max_new_tokens), s, f"{desc} {level}")
    rows = []
    for i, probe, gens in zip(chosen, probes, outs):
        bar = hit_bar(s.min_lcs, canonical_text(probe.expected, s.lower))
        for k, g in enumerate(gens):
            m = index.match(g.text, i, bar)
            rows.append({"passage": i, "level": level, "sample": k, "reprobe": reprobe, "output": g.text,
                         "lcs": m.lcs, "bar": bar, "overlap_10gram": m.overlap, "best_lcs": m.best_lcs,
                         "verbatim": m.verbatim, "matched_doc": m.matched_doc, "misattributed": m.misattributed,
                         "refusal": refusal(g.text)})
    return rows


def probe_model(model: torch.nn.Module, tok: PreTrainedTokenizerBase, passages: Sequence[Passage],
                s: ProbeSettings, refusal: RefusalDetector, desc: str = "probe") -> list[dict]:
    """Rows of one model (spec-probes §2.6), each with the passage's doc_id/position/target and
    the semantic hit of the same sample's QA answer (None without QA)."""
    index = PassageIndex([p.text for p in passages], [p.doc_id for p in passages], lower=s.lower)
    probed = [i for i, p in enumerate(passages) if p.target or s.probe_distractors]
    rows = []
    for level in s.levels:
        rows += _level_rows(model, tok, passages, probed, level, index, s, refusal, False, desc)
    top, up = s.levels[-1], stronger(s.levels[-1])
    refused = sorted({r["passage"] for r in rows if r["level"] == top and r["refusal"]})
    if up and refused:
        rows += _level_rows(model, tok, passages, refused, up, index, s, refusal, True, f"{desc} re-probe")
    sem = semantic_hits(model, tok, [passages[i] for i in probed], s, f"{desc} qa")
    sem = {probed[j]: v for j, v in sem.items()}
    for r in rows:
        p = passages[r["passage"]]
        got = sem.get(r["passage"])
        r.update(doc_id=p.doc_id, position=p.position, target=p.target, group=p.label,
                 semantic=got[r["sample"]][1] if got else None,
                 qa_output=got[r["sample"]][0] if got else None)
    return rows
