"""The one registry of metrics: key, category, orientation, reference models, shared work, function.

Each metric is a small function `EvalContext -> MetricResult` that combines the context's shared
computations with the pure formulas of the sibling modules. Families that differ only in a
parameter (the four MIA attacks, the three Fisher mask sizes, the three utility sets) are built
from tables, so there is no branching on metric names anywhere.

Orientation (SPEC.md 9): "knowledge" = higher means more knowledge of the forget set (raw metrics
1-12); "erasure" = higher means more erasure (s_*, CKA, Logit Lens, Fisher); "utility" = higher
means more preserved utility (section 4.6).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable, Iterable, Sequence

import numpy as np

from metrics import fluency as fl
from metrics import memorization as mem
from metrics import mem_bits as mbits
from metrics import mia
from metrics.context import EvalContext
from metrics.probe import metric as probe_metric
from metrics.references import check_reference_tokenizer
from uds.errors import UdsInputError
from uds.parity import REFERENCE_EPS
from metrics.representation import FISHER_FRACTIONS, cka_score, fisher_masked_score, logit_lens_score
from metrics.result import MetricResult
from metrics.rouge_metrics import mean_rouge_l_recall, rouge_l_recall
from metrics.stats import TokenStats, prob
from metrics.uds_metric import uds_result
from metrics.utility import UTILITY_KEYS, model_utility, normalised_prob, proxy_fluency

KNOWLEDGE, ERASURE, UTILITY = "knowledge", "erasure", "utility"
MODEL, FULL, RETAIN, BASE = "model", "full", "retain", "base"


@dataclass(frozen=True)
class Use:
    """A shared computation a metric consumes (also what the run plans its sweeps from)."""
    kind: str                      # teacher_forced | generation | states | fisher | base_score | classifier
    roles: tuple[str, ...]
    split: str | None = None
    detail: tuple[str, ...] = ()   # answer variants (teacher_forced) or prompt kind (generation)


@dataclass(frozen=True)
class MetricSpec:
    key: str
    category: str                  # memorization | generation | mia | mia_normalised | representation | utility
    orientation: str               # knowledge | erasure | utility
    uses: tuple[Use, ...]
    compute: Callable[[EvalContext], MetricResult]
    description: str
    depends: tuple[str, ...] = ()  # metrics whose results `compute` reads from ctx.results

    @property
    def references(self) -> tuple[str, ...]:
        """Roles besides the evaluated model that this metric's own work loads."""
        return tuple(sorted({r for u in self.uses for r in u.roles} - {MODEL}))

    def knowledge_view(self, value: float) -> float:
        """The value oriented as "higher = more knowledge" (meta-eval inverts erasure scores)."""
        return 1.0 - value if self.orientation == ERASURE else value


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def _per_item(values: list[float | None]) -> MetricResult:
    return MetricResult(_mean(values), values)


def _tf(split: str, *variants: str, roles: tuple[str, ...] = (MODEL,)) -> Use:
    return Use("teacher_forced", roles, split, variants)


def _gen(split: str, kind: str = "plain", roles: tuple[str, ...] = (MODEL,)) -> Use:
    return Use("generation", roles, split, (kind,))


# --- memorisation (SPEC 4.1) -------------------------------------------------------------------

def _forget(ctx: EvalContext):
    return ctx.teacher_forced(MODEL, "forget")


def _p_correct(group: Sequence[TokenStats], floor: bool = False) -> float:
    """Probability of the correct answer(s); `floor` (parity reference): each floored at 1e-12."""
    probs = [prob(s) for s in group]
    return mem.floored_gm(probs) if floor else mem.combined_prob(probs)


def _p_wrong(group: Sequence[TokenStats], floor: bool = False) -> float:
    """Geometric-mean probability of the wrong answers; `floor`: each floored at 1e-12 first."""
    return mem.floored_gm([prob(s) for s in group]) if floor else mem.wrong_prob([s.avg_loss for s in group])


def _truth_ratio(group_c: Sequence[TokenStats], group_w: Sequence[TokenStats], variant: Callable,
                 floor: bool = False) -> float | None:
    if not group_c or not group_w:
        return None
    return variant(_p_correct(group_c, floor), _p_wrong(group_w, floor))


def _paraprob(c: EvalContext) -> MetricResult:
    floor = c.settings.reference
    return _per_item([_p_correct(g, floor) if g else None for g in _forget(c).paraphrased])


def _forget_truth_ratio(c: EvalContext) -> MetricResult:
    floor = c.settings.reference
    return _per_item([_truth_ratio(p, w, mem.truth_ratio_prob_mean, floor)
                      for p, w in zip(_forget(c).paraphrased, _forget(c).perturbed)])


MEMORIZATION = [
    MetricSpec("es", "memorization", KNOWLEDGE, (_tf("forget", "answer"),),
               lambda c: _per_item([mem.extraction_strength(s.preds, s.targets) for s in _forget(c).answers()]),
               "extraction strength of the greedy predictions over the answer (eos dropped)"),
    MetricSpec("em", "memorization", KNOWLEDGE, (_tf("forget", "answer"),),
               lambda c: _per_item([mem.exact_memorization(s.preds, s.targets) for s in _forget(c).answers()]),
               "exact memorization: token accuracy of greedy predictions over the answer (eos dropped)"),
    MetricSpec("prob", "memorization", KNOWLEDGE, (_tf("forget", "answer"),),
               lambda c: _per_item([prob(s) for s in _forget(c).answers()]),
               "exp(-mean answer loss) of (question, answer), eos included"),
    MetricSpec("paraprob", "memorization", KNOWLEDGE, (_tf("forget", "paraphrased"),), _paraprob,
               "exp(-mean answer loss) of (question, paraphrased answer)"),
    MetricSpec("truth_ratio", "memorization", KNOWLEDGE, (_tf("forget", "paraphrased", "perturbed"),),
               _forget_truth_ratio, "p_para / (p_para + geometric-mean p_perturbed): the Mem / meta-eval variant"),
]


# --- generation (SPEC 4.2) ---------------------------------------------------------------------

def _rouge(ctx: EvalContext, split: str, kind: str) -> MetricResult:
    gens = ctx.generations(MODEL, split, kind)
    return _per_item([rouge_l_recall(gt, g.text) for gt, g in zip(ctx.answer_texts(split), gens)])


def _para_rouge(ctx: EvalContext) -> MetricResult:
    gens = ctx.generations(MODEL, "forget", "plain")
    refs = [[t.strip() for t in ([p] if isinstance(p, str) else list(p or []))]
            for p in (it.get("paraphrased_answer") for it in ctx.split("forget"))]
    return _per_item([mean_rouge_l_recall(r, g.text) if r else None for r, g in zip(refs, gens)])


GENERATION = [
    MetricSpec("rouge", "generation", KNOWLEDGE, (_gen("forget"),),
               lambda c: _rouge(c, "forget", "plain"),
               "ROUGE-L recall of the greedy answer to the question vs the answer"),
    MetricSpec("para_rouge", "generation", KNOWLEDGE, (_gen("forget"),), _para_rouge,
               "ROUGE-L recall of the same greedy answer vs the paraphrased answer"),
    MetricSpec("jailbreak_rouge", "generation", KNOWLEDGE, (_gen("forget", "jailbreak"),),
               lambda c: _rouge(c, "forget", "jailbreak"),
               'ROUGE-L recall of the greedy answer after "Sure, here is the answer:" vs the answer'),
]


# --- membership inference (SPEC 4.3-4.4) -------------------------------------------------------

ATTACKS: dict[str, Callable[[TokenStats, str], float]] = {
    "loss": lambda s, text: mia.loss_score(s.avg_loss),
    "zlib": lambda s, text: mia.zlib_score(s.avg_loss, text),
    "min_k": lambda s, text: mia.min_k_score(s.logprobs),
    "min_kpp": lambda s, text: mia.min_kpp_score(s.zscores),
}


def attack_scores(ctx: EvalContext, role: str, split: str, attack: str) -> list[float]:
    """Per-item statistic of one attack on one split (higher = less likely a member)."""
    stats = ctx.teacher_forced(role, split).answers()
    return [ATTACKS[attack](s, t) for s, t in zip(stats, ctx.answer_texts(split))]


def attack_auc(ctx: EvalContext, role: str, attack: str) -> float:
    """AUC of forget (members, label 0) vs holdout (non-members, label 1) for the role's model."""
    return mia.mia_auc(attack_scores(ctx, role, "forget", attack), attack_scores(ctx, role, "holdout", attack))


def _mia_specs(attack: str) -> list[MetricSpec]:
    def raw(c: EvalContext) -> MetricResult:
        return MetricResult(attack_auc(c, MODEL, attack))

    def normalised(c: EvalContext) -> MetricResult:
        return MetricResult(mia.retain_normalised(attack_auc(c, MODEL, attack), attack_auc(c, RETAIN, attack)))

    uses = (_tf("forget", "answer"), _tf("holdout", "answer"))
    ref_uses = tuple(_tf(u.split, *u.detail, roles=(MODEL, RETAIN)) for u in uses)
    return [
        MetricSpec(f"mia_{attack}", "mia", KNOWLEDGE, uses, raw,
                   f"AUC of the {attack} attack, forget (label 0) vs holdout (label 1); 1 = memorised"),
        MetricSpec(f"s_mia_{attack}", "mia_normalised", ERASURE, ref_uses, normalised,
                   f"clip(1 - |AUC - AUC_retain| / AUC_retain, 0, 1) of the {attack} attack"),
    ]


_MIA_PAIRS = [_mia_specs(a) for a in ATTACKS]
MIA = [raw for raw, _ in _MIA_PAIRS] + [norm for _, norm in _MIA_PAIRS]  # DESIGN.md key order


# --- representation (SPEC 4.5) -----------------------------------------------------------------

def _cka(c: EvalContext) -> MetricResult:
    return MetricResult(cka_score(c.cka_layers(FULL), c.cka_layers(MODEL)))


def _logit_lens(c: EvalContext) -> MetricResult:
    value, per_item = logit_lens_score(c.lens(FULL), c.lens(RETAIN), c.lens(MODEL))
    return MetricResult(value, per_item)


def _fisher_spec(p: float) -> MetricSpec:
    return MetricSpec(f"fisher_masked_{p:g}", "representation", ERASURE, (Use("fisher", (MODEL, FULL, RETAIN)),),
                      lambda c: MetricResult(fisher_masked_score(c.fisher_masks(p), c.fisher(MODEL),
                                                                 model_dtype=c.settings.reference)),
                      f"Fisher erasure on the top {p:.2%} of max(F_ret - F_full, 0) per block, weighted")


REPRESENTATION = [
    MetricSpec("cka", "representation", ERASURE, (Use("states", (MODEL, FULL, RETAIN)),), _cka,
               "per-layer CKA to the retain model, normalised by the full model's, weighted by 1 - c_l"),
    MetricSpec("logit_lens", "representation", ERASURE, (Use("states", (MODEL, FULL, RETAIN)),), _logit_lens,
               "entity log-prob of each layer decoded by the full model's head, retain-anchored erasure"),
] + [_fisher_spec(p) for p in FISHER_FRACTIONS]


# --- utility (SPEC 4.6) ------------------------------------------------------------------------

# prefix -> (split, variant that is "correct" in the truth ratio, whether Prob is normalised)
UTILITY_SETS = {"retain": ("retain_eval", "paraphrased", False),
                "ra": ("real_authors", "answer", True),
                "wf": ("world_facts", "answer", True)}


def _utility_specs(prefix: str, split: str, correct: str, normalised: bool) -> list[MetricSpec]:
    def q_prob(c: EvalContext) -> MetricResult:
        st = c.teacher_forced(MODEL, split)
        if not normalised:
            return _per_item([prob(s) for s in st.answers()])
        norm = partial(normalised_prob, eps=REFERENCE_EPS) if c.settings.reference else normalised_prob
        return _per_item([norm(prob(a), [prob(w) for w in ws]) for a, ws in zip(st.answers(), st.perturbed)])

    def truth(c: EvalContext) -> MetricResult:
        st = c.teacher_forced(MODEL, split)
        ref = c.settings.reference   # the reference: probabilities floored at 1e-12, epsilon 1e-12
        variant = partial(mem.truth_ratio_true_better, eps=REFERENCE_EPS) if ref else mem.truth_ratio_true_better
        return _per_item([_truth_ratio(g, w, variant, ref) for g, w in zip(getattr(st, correct), st.perturbed)])

    prob_variants = ("answer", "perturbed") if normalised else ("answer",)
    return [
        MetricSpec(f"{prefix}_q_prob", "utility", UTILITY, (_tf(split, *prob_variants),), q_prob,
                   f"{'normalised ' if normalised else ''}answer probability on {split}"),
        MetricSpec(f"{prefix}_q_rouge", "utility", UTILITY, (_gen(split),),
                   lambda c: _rouge(c, split, "plain"), f"ROUGE-L recall of greedy answers on {split}"),
        MetricSpec(f"{prefix}_truth_ratio", "utility", UTILITY, (_tf(split, correct, "perturbed"),), truth,
                   f"max(0, 1 - p_wrong / p_{correct}) on {split} (OU true_better)"),
    ]


def _model_utility(c: EvalContext) -> MetricResult:
    return MetricResult(model_utility({k: c.results[k].value for k in UTILITY_KEYS}, c.settings.open_unlearning))


def _fluency(c: EvalContext) -> MetricResult:
    gens = c.generations(MODEL, "forget", "plain")
    if c.fluency_classifier:
        vals = fl.classifier_clean_probs(c.fluency_classifier, [g.text for g in gens], c.settings.device)
        return MetricResult(_mean(vals), vals, {"fluency_source": fl.classifier_source(c.fluency_classifier)})
    value, per_item = proxy_fluency(c.base_item_probs(MODEL), c.base_item_probs(FULL))
    return MetricResult(value, per_item, {"fluency_source": fl.PROXY_SOURCE})


UTILITY_METRICS = [s for prefix, args in UTILITY_SETS.items() for s in _utility_specs(prefix, *args)] + [
    MetricSpec("model_utility", "utility", UTILITY, (), _model_utility,
               "HM_eps of the nine retain / real-author / world-fact values (OU parity: scipy's hmean)",
               depends=UTILITY_KEYS),
    MetricSpec("fluency", "utility", UTILITY, (_gen("forget", roles=(MODEL, FULL)), Use("base_score", (BASE,))),
               _fluency, "gibberish-classifier clean probability of forget generations, or the base-LM proxy"),
]

# --- memorisation in bits (SPEC-probes 1.1) ----------------------------------------------------
# x = the answer tokens of a forget item under the chat encoding (eos included, as Prob counts
# them); reference = the retain model. mem_U(x) = max(0, NLL_retain(x) - NLL_model(x)) in bits.



def _answer_bits(ctx: EvalContext, role: str) -> tuple[np.ndarray, np.ndarray]:
    """(code length in bits, answer length in tokens) of each forget answer under the role's model."""
    if role != MODEL:
        check_reference_tokenizer(ctx, role)
    stats = ctx.teacher_forced(role, "forget").answers()
    n = np.array([s.n_labels for s in stats], dtype=np.float64)
    return mbits.bits_from_mean_nll([s.avg_loss for s in stats], n), n


def _mem_items(ctx: EvalContext, role: str) -> np.ndarray:
    """mem_U of each forget item under the role's model, retain as reference (NaN: no answer token)."""
    ref, _ = _answer_bits(ctx, RETAIN)
    bits, n = _answer_bits(ctx, role)
    return np.where(n > 0, mbits.mem_u(ref, bits), np.nan)


def _listed(values: np.ndarray) -> list[float | None]:
    return [float(v) if np.isfinite(v) else None for v in values]


def _mem_bits(c: EvalContext) -> MetricResult:
    return _per_item(_listed(_mem_items(c, MODEL)))


def _mem_bits_per_token(c: EvalContext) -> MetricResult:
    _, n = _answer_bits(c, MODEL)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _per_item(_listed(_mem_items(c, MODEL) / n))


def _mem_bits_erased(c: EvalContext) -> MetricResult:
    model, full = _mem_items(c, MODEL), _mem_items(c, FULL)
    per_item = [mbits.erased(m, f) if np.isfinite(m) and np.isfinite(f) else None for m, f in zip(model, full)]
    return MetricResult(mbits.erased(_mean(_listed(model)), _mean(_listed(full))), per_item)


def _mem_bits_tfidf(c: EvalContext) -> MetricResult:
    docs = c.answer_texts("forget")
    corpus = docs + c.answer_texts("retain_eval")   # the retain items every evaluation context holds
    tfidf = mbits.tfidf_scores(docs, corpus)
    rho, p = mbits.spearman(tfidf, _mem_items(c, FULL))
    return MetricResult(rho, _listed(tfidf), {"spearman_p": p, "corpus": "forget + retain_eval answers"})


_MEM_TF = _tf("forget", "answer", roles=(MODEL, RETAIN))
_MEM_TF_FULL = _tf("forget", "answer", roles=(MODEL, RETAIN, FULL))
MEM_BITS_METRICS: list[MetricSpec] = [
    MetricSpec("mem_bits", "memorization_bits", KNOWLEDGE, (_MEM_TF,), _mem_bits,
               "mean over forget items of max(0, NLL_retain - NLL_model) of the answer tokens, in bits"),
    MetricSpec("mem_bits_per_token", "memorization_bits", KNOWLEDGE, (_MEM_TF,), _mem_bits_per_token,
               "the same per item divided by its answer length in tokens (bits per token)"),
    MetricSpec("mem_bits_erased", "memorization_bits", ERASURE, (_MEM_TF_FULL,), _mem_bits_erased,
               "clip(1 - mem_bits(model) / mem_bits(full), 0, 1): full 0, retain 1"),
    MetricSpec("mem_bits_tfidf", "memorization_bits", KNOWLEDGE,
               (_tf("forget", "answer", roles=(RETAIN, FULL)),), _mem_bits_tfidf,
               "diagnostic, not a model score: Spearman rho of per-item TF-IDF (per_example) with mem_U of "
               "the full model"),
]


# --- verbatim / semantic probe (SPEC-probes 2) ------------------------------------------------


PROBE_METRICS: list[MetricSpec] = [
    MetricSpec("verbatim_rate", "memorization", KNOWLEDGE, (Use("probe", (MODEL,), "forget", ("prefix",)),),
               probe_metric.verbatim_rate,
               "share of prefix-level outputs (greedy + 5 samples, T 0.3) reproducing the forget passage "
               "(character LCS >= 50, distractor-attributed; SPEC-probes 2.4)"),
    MetricSpec("semantic_acc", "memorization", KNOWLEDGE, (Use("probe", (MODEL,), "forget", ("prefix",)),),
               probe_metric.semantic_acc,
               "share of QA answers (greedy + 5 samples, T 0.3) containing the forget item's entity"),
]


# --- UDS (SPEC 2) through the engine: a representation-level erasure score -------------------

ENGINE_METRICS = [
    MetricSpec("uds", "representation", ERASURE, (Use("uds", (MODEL, FULL, RETAIN)),), uds_result,
               "Unlearning Depth Score: S2 (model -> full) over S1 (retain -> full) patching damage"),
]

REGISTRY: dict[str, MetricSpec] = {s.key: s for s in MEMORIZATION + GENERATION + MIA + REPRESENTATION
                                   + UTILITY_METRICS + ENGINE_METRICS + MEM_BITS_METRICS + PROBE_METRICS}
BASELINE_KEYS = tuple(s.key for s in MEMORIZATION + GENERATION + MIA + REPRESENTATION)
ALL_KEYS = tuple(s.key for s in MEMORIZATION + GENERATION + MIA + REPRESENTATION + UTILITY_METRICS)  # `uds metrics all`
META_KEYS = BASELINE_KEYS + tuple(s.key for s in ENGINE_METRICS)  # the 22 meta-evaluated keys (DESIGN.md order)
# The probes' keys (SPEC-probes): meta-evaluated when named (`--metrics mem_bits,...`), not under "all".
PROBE_META_KEYS = (("mem_bits", "mem_bits_per_token", "mem_bits_erased")   # mem_bits_tfidf is a diagnostic
                   + tuple(s.key for s in PROBE_METRICS))


# --- running -----------------------------------------------------------------------------------

def metric_keys(text: str) -> list[str]:
    """`uds metrics`' key list: `all` or comma-separated registry keys in the order given (not
    `uds`, which comes from `uds score`); UdsInputError lists the valid keys."""
    if text.strip() == "all":
        return list(ALL_KEYS)
    keys = [k.strip() for k in text.split(",") if k.strip()]
    bad = [k for k in keys if k not in REGISTRY or k == "uds"]  # uds is in the registry for meta-eval, but comes from `uds score`
    if bad or not keys:
        hint = " (uds itself comes from `uds score`)" if "uds" in bad else ""
        raise UdsInputError(f"unknown metric {', '.join(bad) or repr(text)}{hint}; valid: all, {', '.join(ALL_KEYS)}")
    return list(dict.fromkeys(keys))


def with_dependencies(keys: Sequence[str]) -> list[str]:
    """`keys` preceded by the metrics they read, each once, dependencies first."""
    order: list[str] = []

    def visit(k: str) -> None:
        for d in REGISTRY[k].depends:
            visit(d)
        if k not in order:
            order.append(k)
    for k in keys:
        visit(k)
    return order


def sweep_plan(keys: Sequence[str]) -> dict[tuple[str, str], set[str]]:
    """(role, split) -> answer variants to sweep, union over the metrics (and their dependencies)."""
    plan: dict[tuple[str, str], set[str]] = {}
    for k in with_dependencies(keys):
        for u in REGISTRY[k].uses:
            if u.kind == "teacher_forced":
                for role in u.roles:
                    plan.setdefault((role, u.split), set()).update(u.detail)
    return plan


def evaluate(ctx: EvalContext, keys: Sequence[str]) -> dict[str, MetricResult]:
    """Compute `keys` (dependencies too, shared work once via `ctx`); returns only `keys`."""
    for k in with_dependencies(keys):
        if k not in ctx.results:
            ctx.results[k] = REGISTRY[k].compute(ctx)
    return {k: ctx.results[k] for k in keys}
