"""The ladder on long passages: chat levels ask for a whole passage, the `prefix` level
gives the passage up to each inner sentence boundary (raw text with BOS; rows `cut: "sentence"`)
and checks the rest; it also gives the passage's first `prefix_words` words, spec-probes §2.2's own
prefix, which may end inside a sentence (rows `cut: "words"`, `start`: None), for comparison.

Matching against the continuation only (not the whole passage): an output that echoes its prompt
must not count as recall. Attribution still ranks every passage of the corpus, so a continuation
that matches another author's passage better is a misattribution, not a hit. The semantic side
asks each sentence's QA question (chat). No refusal re-probe here: `prefix` is the top level.
"""

from __future__ import annotations

from typing import Sequence

import torch
from transformers import PreTrainedTokenizerBase

from uds_analyses.probe.corpus import Passage
from uds_analyses.probe.ladder import build_probe, split_prefix
from uds_analyses.probe.matching import PassageIndex, canonical_text, hit_bar, lcs_length
from uds_analyses.probe.passages import Cut, LongPassage, cuts
from uds_analyses.probe.refusal import RefusalDetector
from uds_analyses.probe.run import ProbeSettings, _budget, _outputs, semantic_hits


def chat_passage(p: LongPassage) -> Passage:
    """The passage as the chat levels see it: title = author, topic = its first fact's question."""
    q = next((it["question"] for it in p.qa if it), None)
    return Passage(p.doc_id, p.doc_id, p.position, p.text, p.target,
                   topic=q.rstrip("?").strip() if q else None, group=p.group)


def score(index: PassageIndex, output: str, i: int, expected: str, bar: int) -> dict:
    """LCS with the text to recall, and the document the output matches best."""
    m = index.match(output, i, bar)
    lcs = lcs_length(canonical_text(output, index.lower), canonical_text(expected, index.lower))
    own = index.docs[i]
    return {"lcs": lcs, "bar": bar, "best_lcs": m.best_lcs, "matched_doc": m.matched_doc,
            "verbatim": lcs >= bar and m.matched_doc == own, "misattributed": m.misattributed}


def _ids(tok: PreTrainedTokenizerBase, text: str) -> list[int]:
    return list(tok(text, add_special_tokens=True)["input_ids"])


def _units(tok, passages: Sequence[LongPassage], probed: list[int], level: str,
           s: ProbeSettings) -> list[tuple[int, Cut | None, str, list[int], str]]:
    """(passage, sentence cut or None, cut kind, prompt ids, text to recall) of one level."""
    if level == "prefix":
        out = [(i, c, "sentence", _ids(tok, c.prefix), c.rest) for i in probed for c in cuts(passages[i])]
        for i in probed:
            head, rest = split_prefix(chat_passage(passages[i]), s.prefix_words)
            out.append((i, None, "words", _ids(tok, head), rest))
        return out
    out = []
    for i in probed:
        pr = build_probe(tok, chat_passage(passages[i]), level, s.templates, s.prefix_words, s.system_prompt)
        out.append((i, None, "", pr.ids, pr.expected))
    return out


def probe_passages(model: torch.nn.Module, tok: PreTrainedTokenizerBase, passages: Sequence[LongPassage],
                   s: ProbeSettings, refusal: RefusalDetector, desc: str = "passages") -> tuple[list[dict], list[dict]]:
    """(ladder rows: passage x level x cut x sample; QA rows: passage x sentence x sample)."""
    index = PassageIndex([p.text for p in passages], [p.doc_id for p in passages], lower=s.lower)
    probed = [i for i, p in enumerate(passages) if p.target or s.probe_distractors]
    rows = []
    for level in s.levels:
        units = _units(tok, passages, probed, level, s)
        outs = _outputs(model, tok, [u[3] for u in units], _budget(tok, [u[4] for u in units], s.max_new_tokens),
                        s, f"{desc} {level}")
        for (i, cut, kind, _, expected), gens in zip(units, outs):
            p, bar = passages[i], hit_bar(s.min_lcs, canonical_text(expected, s.lower))
            for k, g in enumerate(gens):
                rows.append({"passage": i, "doc_id": p.doc_id, "position": p.position, "target": p.target,
                             "group": p.group, "level": level, "cut": kind, "start": cut.start if cut else None,
                             "sample": k,
                             "reprobe": False, "output": g.text, "refusal": refusal(g.text),
                             **score(index, g.text, i, expected, bar)})
    facts = [(i, j, it) for i in probed for j, it in enumerate(passages[i].qa) if it and it.get("question")]
    asked = [Passage(passages[i].doc_id, passages[i].doc_id, passages[i].position, it["answer"],
                     passages[i].target, it["question"], it["answer"], it.get("entity") or None)
             for i, _, it in facts]
    hits = semantic_hits(model, tok, asked, s, f"{desc} qa")
    qa_rows = [{"passage": i, "doc_id": passages[i].doc_id, "position": passages[i].position,
                "target": passages[i].target, "group": passages[i].group, "sentence": j, "sample": k,
                "output": text, "semantic": hit}
               for n, (i, j, _) in enumerate(facts) for k, (text, hit) in enumerate(hits.get(n, []))]
    return rows, qa_rows
