"""The leaderboard's columns: headline first, the rest in named groups a reader switches on, each
with its direction (what a higher value means) and how it prints.

Directions follow spec §9 and the registry's orientations (tests/test_report_table.py checks
every registry key against `metrics.registry`, which this module does not import: the report
starts without the metric stack). A column not listed here goes to the group "other", without a
direction.
"""

from __future__ import annotations

from meta_eval.leaderboard_rows import DECIMALS, UDS_DECIMALS

KNOWLEDGE, ERASURE, UTILITY, BETTER = "knowledge", "erasure", "utility", "better"
DIRECTIONS = {
    KNOWLEDGE: "higher = more knowledge of the forget set kept (lower = deeper unlearning)",
    ERASURE: "higher = more erased",
    UTILITY: "higher = more utility kept",
    BETTER: "higher = better (harmonic mean of Mem, Privacy and Utility)",
}
# the best end of a column for ranks: the lowest for knowledge, the highest for the others
LOWER_IS_BETTER = {KNOWLEDGE}

HEADLINE = ("uds", "mem", "privacy", "utility_rel", "overall")
LABELS = {"uds": "UDS", "mem": "Mem", "privacy": "Privacy", "utility_rel": "Utility", "overall": "Overall",
          "privacy_mia": "Privacy (MIA)", "utility": "utility (abs.)", "overall_no_uds": "Overall w/o UDS",
          "train_seconds": "train s", "n_scored": "n scored"}
TITLES = {"uds": "Unlearning Depth Score, mean over scored examples, with its 95% bootstrap interval",
          "mem": "Mem = HM(1-ES, 1-EM, 1-ParaProb, 1-TruthRatio) (spec §6.1)",
          "privacy": "Privacy = HM(Privacy_MIA, UDS) (spec §6.1)",
          "utility_rel": "Utility = min(1, utility / U_full of the epoch group) (spec §6.1)",
          "overall": "Overall = HM(Mem, Privacy, Utility) (spec §6.1)",
          "overall_no_uds": "HM(Mem, Privacy_MIA, Utility): the leaderboard without UDS"}

GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("memorisation", "memorisation", ("es", "em", "prob", "paraprob", "truth_ratio", "mem_bits", "mem_bits_signed",
                                      "mem_bits_per_token", "mem_bits_erased", "mem_bits_tfidf", "verbatim_rate",
                                      "semantic_acc")),
    ("generation", "generation", ("rouge", "para_rouge", "jailbreak_rouge")),
    ("mia", "MIA", ("mia_loss", "mia_zlib", "mia_min_k", "mia_min_kpp", "s_mia_loss", "s_mia_zlib", "s_mia_min_k",
                    "s_mia_min_kpp", "privacy_mia")),
    ("representation", "representation", ("cka", "logit_lens", "fisher_masked_0.0001", "fisher_masked_0.001",
                                          "fisher_masked_0.01")),
    ("utility", "utility detail", ("utility", "model_utility", "fluency", "retain_q_prob", "retain_q_rouge",
                                   "retain_truth_ratio", "ra_q_prob", "ra_q_rouge", "ra_truth_ratio", "wf_q_prob",
                                   "wf_q_rouge", "wf_truth_ratio")),
    ("training", "training", ("lr", "epochs", "batch_size", "alpha", "beta", "gamma", "delta", "layer", "steer",
                              "train_seconds")),
)
OTHER = "other"

_ERASURE_KEYS = ("uds", "mem", "privacy", "privacy_mia", "s_mia_loss", "s_mia_zlib", "s_mia_min_k", "s_mia_min_kpp",
                 "cka", "logit_lens", "fisher_masked_0.0001", "fisher_masked_0.001", "fisher_masked_0.01",
                 "mem_bits_erased")
_UTILITY_KEYS = ("utility_rel", "utility", "model_utility", "fluency", "retain_q_prob", "retain_q_rouge",
                 "retain_truth_ratio", "ra_q_prob", "ra_q_rouge", "ra_truth_ratio", "wf_q_prob", "wf_q_rouge",
                 "wf_truth_ratio")
_KNOWLEDGE_KEYS = ("es", "em", "prob", "paraprob", "truth_ratio", "rouge", "para_rouge", "jailbreak_rouge",
                   "mia_loss", "mia_zlib", "mia_min_k", "mia_min_kpp", "mem_bits", "mem_bits_signed",
                   "mem_bits_per_token", "mem_bits_tfidf", "verbatim_rate", "semantic_acc")
DIRECTION: dict[str, str] = ({k: ERASURE for k in _ERASURE_KEYS} | {k: UTILITY for k in _UTILITY_KEYS}
                             | {k: KNOWLEDGE for k in _KNOWLEDGE_KEYS} | {"overall": BETTER, "overall_no_uds": BETTER})
# printed as: "f<d>" fixed decimals, "int", "sci" (learning rates), "plain" (shortest form)
FORMATS = {"lr": "sci", "epochs": "int", "batch_size": "int", "layer": "int", "n_scored": "int",
           "train_seconds": "f1", "alpha": "plain", "beta": "plain", "gamma": "plain", "delta": "plain",
           "steer": "plain"}


def group_of(key: str) -> str:
    """The named group of a non-headline column ("other" when unknown)."""
    return next((name for name, _, keys in GROUPS if key in keys), OTHER)


def column(key: str) -> dict:
    """What the page needs to show one column: label, group, direction (None: no direction, no
    rank), its sentence, how it prints, and a title for the header."""
    direction = DIRECTION.get(key)
    fmt = FORMATS.get(key, f"f{UDS_DECIMALS if key == 'uds' else DECIMALS}")
    sentence = DIRECTIONS.get(direction, "")
    title = "; ".join(t for t in (TITLES.get(key, key), sentence) if t)
    return {"key": key, "label": LABELS.get(key, key), "group": "headline" if key in HEADLINE else group_of(key),
            "direction": direction, "lower_is_better": direction in LOWER_IS_BETTER, "sentence": sentence,
            "format": fmt, "title": title}


def columns_of(present: set[str]) -> list[dict]:
    """The columns some model has a value for: headline in HEADLINE order, then each group's in
    its listed order, then the others alphabetically."""
    listed = [k for _, _, keys in GROUPS for k in keys]
    order = [k for k in HEADLINE if k in present] + [k for k in listed if k in present]
    order += sorted(present - set(order))
    return [column(k) for k in order]


def groups_of(cols: list[dict]) -> list[dict]:
    """The non-empty groups, in GROUPS order then "other", with their columns."""
    names = [(n, label) for n, label, _ in GROUPS] + [(OTHER, OTHER)]
    out = []
    for name, label in names:
        keys = [c["key"] for c in cols if c["group"] == name]
        if keys:
            out.append({"name": name, "label": label, "columns": keys})
    return out
