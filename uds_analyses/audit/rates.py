"""Aggregates of per-fact audit results: per-cell scores and count-weighted rates (pure)."""

from __future__ import annotations

from collections import defaultdict
from statistics import fmean

from uds_analyses.audit.protocol import STATES, FactResult
from uds_analyses.audit.scoring import mean_scores


def cross_state(facts: list[FactResult]) -> dict[str, float]:
    """Count-weighted L, R, artefact (spec-probes §3.3), mediated artefact (artefact and R) and
    evidence rates over paired (DEL-ON, DEL-OFF) facts, with the chance level of their EMs."""
    if not facts:
        return {"paired_count": 0}
    return {"paired_count": len(facts),
            "parametric_leakage": fmean(f.leak for f in facts),
            "retrieval_mediated_correctness": fmean(f.retrieval for f in facts),
            "retrieval_artifact_rate": fmean(f.artefact for f in facts),
            "mediated_artifact_rate": fmean(f.artefact_mediated for f in facts),
            "near_miss_evidence_rate": fmean(f.evidence for f in facts),
            "del_on_correct": fmean(f.scores["DEL-ON"].exact for f in facts),
            "chance": fmean(f.chance for f in facts), "chance_uniform": fmean(f.chance_uniform for f in facts)}


def cells(facts: list[FactResult]) -> list[dict]:
    """One row per (variant, style, state): count, EM, contains, unknown, P, R, F1, and the
    cross-state rates of the (variant, style) on every state's row."""
    groups: dict[tuple[str, str], list[FactResult]] = defaultdict(list)
    for f in facts:
        groups[(f.variant, f.style)].append(f)
    rows = []
    for (variant, style), fs in groups.items():
        cs = cross_state(fs)
        for st in STATES:
            rows.append({"variant": variant, "style": style, "state": st,
                         **mean_scores(f.scores[st] for f in fs), **cs})
    return rows


def variant_summary(facts: list[FactResult]) -> dict[str, dict]:
    """docs/design.md `variants`: leakage, retrieval_mediated, artifact_rate, full_em, n_facts, plus
    del_on_em, del_off_em, the DEL-ON correctness split used by the figure and the chance level
    (`chance`: majority, `chance_uniform`; uds_analyses.audit.chance) the EMs, L and artefact are read against."""
    by: dict[str, list[FactResult]] = defaultdict(list)
    for f in facts:
        by[f.variant].append(f)
    out = {}
    for v, fs in by.items():
        out[v] = {"leakage": fmean(f.leak for f in fs), "retrieval_mediated": fmean(f.retrieval for f in fs),
                  "artifact_rate": fmean(f.artefact for f in fs),
                  "mediated_artifact_rate": fmean(f.artefact_mediated for f in fs),
                  "near_miss_evidence": fmean(f.evidence for f in fs),
                  "full_em": fmean(f.scores["FULL"].exact for f in fs),
                  "del_on_em": fmean(f.scores["DEL-ON"].exact for f in fs),
                  "del_off_em": fmean(f.scores["DEL-OFF"].exact for f in fs),
                  "chance": fmean(f.chance for f in fs), "chance_uniform": fmean(f.chance_uniform for f in fs),
                  "n_facts": len({f.fact_id for f in fs}), "n_prompts": len(fs)}
    return out


def attribution(facts: list[FactResult]) -> dict[str, dict[str, float]]:
    """DEL-ON correctness per variant split into parts that add up to it (fractions of prompts):
    parametric (also correct with retrieval off), retrieval via near-miss evidence (the spliced
    value is gold-equivalent, from a retained non-equivalent entry), other retrieval-mediated."""
    by: dict[str, list[FactResult]] = defaultdict(list)
    for f in facts:
        by[f.variant].append(f)
    out = {}
    for v, fs in by.items():
        on = [f.scores["DEL-ON"].exact == 1.0 for f in fs]
        param = fmean(int(o and f.leak) for o, f in zip(on, fs))
        evid = fmean(f.evidence for f in fs)
        out[v] = {"parametric": param, "near_miss_evidence": evid,
                  "other_retrieval": fmean(f.retrieval for f in fs) - evid}
    return out
