"""Two-stage activation patching (spec §2.3-2.5): teacher-forced entity log-probs of the full
model with one layer's output at the entity positions replaced by a source model's.

Batches are right-padded and their attention mask is built from the sequence lengths, so the
tokenizer's padding side and pad id never touch the numbers. Two algorithms give the same
numbers (float32: within 1e-5; tests/test_engine_fast.py):

- "naive", the straightforward one: each source model runs once per batch (all layers
  captured); the target then runs once per layer, whole sequence, with that layer patched.
- "fast" (default; uds_core/capture.py, uds_core/suffix.py, uds_core/packing.py): per batch one capture pass
  of the target and of each source, then only what a patch changes: the entity windows through
  the blocks above the patched layer, the final norm and the LM head at the scored positions,
  for every layer and the examples of several batches in one stacked pass per block.
  Families it cannot handle fall back to "naive" with a one-time notice.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field
from typing import Callable, Literal, Sequence

import numpy as np
import torch
import torch.nn as nn

from uds_core import capture, formula, suffix
from uds_core.arch import Component, component_module, final_norm, num_layers
from uds_core.batching import right_padded
from uds_core.errors import UdsInputError
from uds_core.hooks import at_positions, capture_outputs, replace_output
from uds_core.prompts import Examples, PreparedItem, SkippedItem
from uds_core.logprobs import token_logprobs
from uds_core.memory import release_memory

Progress = Callable[[int], None]  # called with the number of forward passes just done
LOGPROB_DTYPES = ("model", "float32")
LogprobDtype = Literal["model", "float32"]   # LOGPROB_DTYPES as a type
ALGORITHMS = ("fast", "naive")


class FastPathUnavailable(UserWarning):
    """The fast algorithm cannot handle a model; the straightforward one runs instead."""


@dataclass(frozen=True)
class EngineSettings:
    component: Component = "block"
    batch_size: int = 8
    logprob_dtype: LogprobDtype = "model"   # "model": log-softmax in the logits' dtype (reference parity)
    reference_last_layer: bool = False  # patch the post-final-norm state into the last layer's slot
    layers: tuple[int, ...] | None = None  # None = every decoder layer
    algorithm: str = "fast"             # fast | naive (the straightforward one, for comparisons)
    max_suffix_rows: int = 256          # fast: most (example, layer) variants stacked in one pass

    def layer_list(self, model: nn.Module) -> list[int]:
        return list(self.layers) if self.layers is not None else list(range(num_layers(model)))

    def validate(self) -> None:
        if self.batch_size < 1:
            raise UdsInputError(f"--batch-size must be at least 1, got {self.batch_size}")
        if self.logprob_dtype not in LOGPROB_DTYPES:
            raise UdsInputError(f"unknown logprob dtype {self.logprob_dtype!r} (choose model or float32)")
        if self.reference_last_layer and self.component != "block":
            raise UdsInputError("--parity reference (--reference-last-layer) applies only to --component block")
        if self.algorithm not in ALGORITHMS:
            raise UdsInputError(f"unknown algorithm {self.algorithm!r} (choose {', '.join(ALGORITHMS)})")
        if self.max_suffix_rows < 1:
            raise UdsInputError(f"max_suffix_rows must be at least 1, got {self.max_suffix_rows}")


@dataclass
class Batch:
    """Right-padded inputs of a few items plus the flattened (row, position) patch sites."""
    items: list[PreparedItem]
    input_ids: torch.Tensor        # (B, T) long
    attention_mask: torch.Tensor   # (B, T) long, 1 on real tokens
    rows: torch.Tensor             # (K,) row of each patched position
    positions: torch.Tensor        # (K,) sequence position of each patched position


def make_batch(items: Sequence[PreparedItem], device: torch.device | str, pad_id: int = 0) -> Batch:
    """Right padding and mask from lengths (a pad id equal to a real token id is harmless)."""
    ids, mask = right_padded([it.input_ids for it in items], pad_id)
    sites = [(row, p) for row, it in enumerate(items) for p in it.eval_positions]
    rows = torch.tensor([r for r, _ in sites], dtype=torch.long)
    positions = torch.tensor([p for _, p in sites], dtype=torch.long)
    return Batch(list(items), ids.to(device), mask.to(device), rows.to(device), positions.to(device))


def chunks(items: Sequence[PreparedItem], size: int) -> list[list[PreparedItem]]:
    """Consecutive batches of at most `size` items, in data order."""
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


def model_device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def entity_scores(logits: torch.Tensor, batch: Batch, logprob_dtype: str = "model") -> np.ndarray:
    """Mean log-prob of each item's entity tokens: logits (B, T, V) -> (B,) float64 nats.

    In "model" mode the log-softmax and the mean run in the logits' dtype, as the reference
    does in bf16; "float32" upcasts first.
    """
    out = np.empty(len(batch.items), dtype=np.float64)
    for row, item in enumerate(batch.items):
        pos = item.eval_positions
        rows = logits[row, pos.start:pos.stop]
        if logprob_dtype == "float32":
            rows = rows.float()
        target = torch.tensor(item.target_ids, dtype=torch.long, device=rows.device)
        out[row] = token_logprobs(rows, target).mean().item()
    return out


def _forward(model: nn.Module, batch: Batch) -> torch.Tensor:
    return model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, use_cache=False).logits


@torch.no_grad()
def forward_scores(model: nn.Module, batch: Batch, logprob_dtype: str = "model") -> np.ndarray:
    """Unpatched entity scores (B,) of `model` on `batch`."""
    return entity_scores(_forward(model, batch), batch, logprob_dtype)


@torch.no_grad()
def source_states(model: nn.Module, batch: Batch, layers: Sequence[int], component: str = "block",
                  reference_last_layer: bool = False) -> dict[int, torch.Tensor]:
    """One forward of the source: layer -> its activation at the patch sites, (K, H).

    With `reference_last_layer`, the last layer's entry is the final norm's output instead
    (the reference's hidden_states[-1] quirk).
    """
    last = num_layers(model) - 1
    modules = {str(l): component_module(model, l, component) for l in layers}
    quirk = reference_last_layer and component == "block" and last in layers
    if quirk:
        modules[str(last)] = final_norm(model)
    with capture_outputs(modules, at_positions(batch.rows, batch.positions)) as store:
        _forward(model, batch)
    return {l: store[str(l)] for l in layers}


@torch.no_grad()
def patched_scores(target: nn.Module, batch: Batch, layer: int, values: torch.Tensor,
                   component: str = "block", logprob_dtype: str = "model") -> np.ndarray:
    """Entity scores (B,) of `target` with `component` of `layer` replaced at the patch sites."""
    module = component_module(target, layer, component)
    with replace_output(module, batch.rows, batch.positions, values):
        logits = _forward(target, batch)
    return entity_scores(logits, batch, logprob_dtype)


@dataclass
class PairScores:
    """Per-example scores of one (target, source) sweep: full (N,), patched (N, L), in nats."""
    layers: list[int]
    full_scores: np.ndarray
    patched: np.ndarray

    @property
    def deltas(self) -> np.ndarray:
        return formula.layer_deltas(self.full_scores, self.patched)


def score_pair(target: nn.Module, source: nn.Module, items: Sequence[PreparedItem],
               settings: EngineSettings, pad_id: int = 0, progress: Progress | None = None,
               full_scores: np.ndarray | None = None, runs: TargetRuns | None = None) -> PairScores:
    """Full-model scores and per-layer patched scores of target with source states patched in.

    Passing known `full_scores` (N,) skips the unpatched target pass (and, on the fast path,
    is the baseline that no-op patches return). `runs` keeps the fast path's target captures.
    """
    if uses_fast_path(settings, target, source):
        return _fast_pairs(target, [source], items, settings, pad_id, progress, full_scores, runs)[0]
    return _naive_pair(target, source, items, settings, pad_id, progress, full_scores)


def _naive_pair(target: nn.Module, source: nn.Module, items: Sequence[PreparedItem],
                settings: EngineSettings, pad_id: int = 0, progress: Progress | None = None,
                full_scores: np.ndarray | None = None) -> PairScores:
    """The straightforward algorithm: one full target forward per layer per batch."""
    layers = settings.layer_list(target)
    tick = progress or (lambda n: None)
    full_parts, patched_parts = [], []
    for chunk in chunks(items, settings.batch_size):
        batch = make_batch(chunk, model_device(target), pad_id)
        if full_scores is None:
            full_parts.append(forward_scores(target, batch, settings.logprob_dtype))
            tick(1)
        states = source_states(source, batch, layers, settings.component, settings.reference_last_layer)
        tick(1)
        cols = []
        for l in layers:
            cols.append(patched_scores(target, batch, l, states[l], settings.component, settings.logprob_dtype))
            tick(1)
        patched_parts.append(np.stack(cols, axis=1))
    full = np.asarray(full_scores, dtype=np.float64) if full_scores is not None else _cat(full_parts)
    patched = np.concatenate(patched_parts) if patched_parts else np.zeros((0, len(layers)))
    return PairScores(layers, full, patched)


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0)


_NOTICES: set[str] = set()


def uses_fast_path(settings: EngineSettings, *models: nn.Module) -> bool:
    """Whether `settings` asks for the fast algorithm and every model can take it; a model that
    cannot gets a one-time notice (per reason) and the straightforward algorithm."""
    if settings.algorithm != "fast":
        return False
    for model in models:
        problem = suffix.fast_path_problem(model, settings.component)
        if problem is not None:
            if problem not in _NOTICES:
                _NOTICES.add(problem)
                warnings.warn(f"UDS fast path unavailable: {problem}; using the straightforward algorithm "
                              "(one full forward per layer)", FastPathUnavailable, stacklevel=3)
            return False
    return True


def algorithm_tag(settings: EngineSettings, *models: nn.Module) -> str:
    """The algorithm that will actually run, with what changes its low-precision numbers (for
    cache keys: S1 and S2 must come from the same computation for UDS(retain) = 1 exactly)."""
    if uses_fast_path(settings, *models):
        # the LM head's chunk of rows changes the matmul's blocking, so low-precision scores too
        return f"fast/rows{settings.max_suffix_rows}/logits{suffix.LOGITS_CHUNK}"
    return "naive"


class TargetRuns:
    """Keeps the target's capture passes (key/value caches, own activations; fast path) between
    calls, so scoring more unlearned models in one process costs each model only its own capture
    pass and the suffix passes. Bound to one target object, item list and batching: a call with
    anything else empties it first. The target's weights must not change while it is in use.
    """

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._runs: dict[int, tuple] = {}

    def get(self, key: tuple, start: int, make: Callable[[], tuple]) -> tuple:
        """The (run, windows) of the batches starting at item `start`, made on first use."""
        if key != self._key:
            self._key, self._runs = key, {}
        if start not in self._runs:
            self._runs[start] = make()
        return self._runs[start]


def _batching_key(items: Sequence[PreparedItem], settings: EngineSettings, pad_id: int, layers: Sequence[int]) -> tuple:
    """What fixes a run's groups, packed layouts and patch sites."""
    inputs = tuple((it.input_ids, it.eval_positions.start, it.eval_positions.stop) for it in items)
    return (inputs, settings.batch_size, settings.max_suffix_rows, settings.component, tuple(layers), pad_id)


def _runs_key(target: nn.Module, items: Sequence[PreparedItem], settings: EngineSettings, pad_id: int) -> tuple:
    return (id(target), *_batching_key(items, settings, pad_id, settings.layer_list(target)))


@torch.inference_mode()  # lighter than no_grad: no version counters, no view tracking
def _fast_pairs(target: nn.Module, sources: Sequence[nn.Module | SourceValues], items: Sequence[PreparedItem],
                settings: EngineSettings, pad_id: int = 0, progress: Progress | None = None,
                full_scores: np.ndarray | None = None, runs: TargetRuns | None = None) -> list[PairScores]:
    """One PairScores per source (a model, or its activations captured before: `SourceValues`),
    sharing the target's capture pass of each batch (kept in `runs` when given, for later calls).

    Capture passes run batch by batch (`batch_size`); the suffix passes stack the variants of
    several consecutive batches (up to `max_suffix_rows` variants), which amortises per-call
    costs on small models. Progress ticks match `passes_per_pair` (1 per unpatched target pass
    when no `full_scores` are given, 1 per source capture, 1 per layer).
    """
    layers = settings.layer_list(target)
    tick = progress or (lambda n: None)
    given = None if full_scores is None else np.asarray(full_scores, dtype=np.float64)
    key = _runs_key(target, items, settings, pad_id) if runs is not None else None
    if any(isinstance(source, SourceValues) for source in sources):
        values_key = _values_key(items, settings, pad_id, layers)
        if any(isinstance(source, SourceValues) and source.key != values_key for source in sources):
            raise ValueError("source values captured on other items, batching or layers than this run's")
    full_parts: list[np.ndarray] = []
    patched_parts: list[list[np.ndarray]] = [[] for _ in sources]
    for start, group in _batch_groups(items, settings, len(layers)):
        layouts = [capture.capture_layout(chunk, pad_id, target, model_device(target)) for chunk in group]
        # partial, not a closure: bound to this group's layouts, which are deleted at the end of the loop body
        make = functools.partial(_capture_group, target, group, layouts, layers, settings.component)
        run, win = runs.get(key, start, make) if runs is not None else make()
        if given is None:
            base = suffix.baseline_scores(target, run, win, settings.logprob_dtype)
            tick(len(group))
        else:
            base = given[start:start + len(win.lengths)]
        full_parts.append(base)
        for parts, source in zip(patched_parts, sources):
            captured = isinstance(source, SourceValues)
            values = source.at(start, layouts) if captured else _source_values(source, layouts, layers, settings)
            parts.append(_patched_by(target, values, win, run, base, layers, settings))
            tick(len(group) * (len(layers) + (0 if captured else 1)))   # a captured source ticked its pass then
            del values
        del run, win, layouts  # free this group's caches before the next group's captures
        # and hand their pages back: freed but kept by the allocator, a 1B model's groups left
        # gigabytes of resident heap behind them over a few hundred examples
        release_memory()
    full = given if given is not None else _cat(full_parts)
    return [PairScores(layers, full, np.concatenate(p) if p else np.zeros((0, len(layers))))
            for p in patched_parts]


def _batch_groups(items: Sequence[PreparedItem], settings: EngineSettings, n_layers: int):
    """(first item index, consecutive batches) with at most max_suffix_rows // L examples in
    all (at least one batch): the examples whose variants share suffix passes."""
    per_stack = max(1, settings.max_suffix_rows // max(1, n_layers))
    group: list[list[PreparedItem]] = []
    start = 0
    for chunk in chunks(items, settings.batch_size):
        if group and sum(map(len, group)) + len(chunk) > per_stack:
            yield start, group
            start, group = start + sum(map(len, group)), []
        group.append(chunk)
    if group:
        yield start, group


def _capture_group(target: nn.Module, group: list[list[PreparedItem]], layouts: list[capture.CaptureLayout],
                   layers: list[int], component: str) -> tuple[capture.TargetRun, suffix.Windows]:
    """The target's capture pass of each batch, merged, and the windows of all their examples."""
    parts = [capture.capture_target(target, layout, layers, component) for layout in layouts]
    device = layouts[0].input_ids.device
    return capture.merge_runs(parts), suffix.windows_of([it for chunk in group for it in chunk], device)


def _source_values(source: nn.Module, layouts: list[capture.CaptureLayout], layers: list[int],
                   settings: EngineSettings) -> dict[int, torch.Tensor]:
    """A group's source activations at its patch sites, layer -> (K, H): one capture per batch."""
    return capture.merge_values([
        capture.capture_source(source, layout, layers, settings.component, settings.reference_last_layer)
        for layout in layouts])


def _patched_by(target: nn.Module, values: dict[int, torch.Tensor], win: suffix.Windows, run: capture.TargetRun,
                base: np.ndarray, layers: list[int], settings: EngineSettings) -> np.ndarray:
    """(N, L) patched scores of a group: suffix passes, no-op patches = baseline."""
    patched = suffix.suffix_scores(target, run, win, values, layers, settings.component,
                                   settings.logprob_dtype, settings.max_suffix_rows)
    noop = suffix.noop_variants(values, run.own(settings.component), win, layers)
    return np.where(noop, base[:, None], patched)


def _values_key(items: Sequence[PreparedItem], settings: EngineSettings, pad_id: int, layers: Sequence[int]) -> tuple:
    """`_batching_key` and what else changes a source's captured values."""
    return (*_batching_key(items, settings, pad_id, layers), settings.reference_last_layer)


@dataclass(frozen=True)
class SourceValues:
    """A source model's activations at the patch sites of every group of items, captured before
    the target computes anything (`capture_sources`), so that the source can be released first:
    one model's weights in use at a time instead of two. Patched in, they give the numbers the
    source model itself gives, bit for bit (the same packed layouts and capture passes)."""
    key: tuple                                   # items, batching and layers they belong to
    groups: dict[int, dict[int, torch.Tensor]]   # a group's first item -> layer -> (K, H)
    sites: dict[int, list[torch.Tensor]]         # the group's layouts' site maps, (K_b,) each

    def at(self, start: int, layouts: list[capture.CaptureLayout]) -> dict[int, torch.Tensor]:
        """The values of the group starting at item `start`, checked against the target's layouts."""
        sites = self.sites.get(start)
        if sites is None or len(sites) != len(layouts) or not all(
                torch.equal(a, b.flat.to(a.device)) for a, b in zip(sites, layouts)):
            raise ValueError(f"source values of the group at item {start} were captured in another layout")
        return self.groups[start]


@torch.inference_mode()
def capture_sources(source: nn.Module, items: Sequence[PreparedItem], settings: EngineSettings,
                    pad_id: int = 0, progress: Progress | None = None) -> SourceValues:
    """`source`'s activations at every patch site of `items`, grouped and packed as `compute_uds`
    will run them (fast path only). Ticks 1 per capture batch, as `passes_per_pair` counts a
    source's capture."""
    if not uses_fast_path(settings, source):
        raise ValueError("captured source values need the fast path")
    layers = settings.layer_list(source)
    tick = progress or (lambda n: None)
    groups, sites = {}, {}
    for start, group in _batch_groups(items, settings, len(layers)):
        layouts = [capture.capture_layout(chunk, pad_id, source, model_device(source)) for chunk in group]
        groups[start] = _source_values(source, layouts, layers, settings)
        sites[start] = [layout.flat for layout in layouts]
        tick(len(group))
    return SourceValues(_values_key(items, settings, pad_id, layers), groups, sites)


def passes_per_pair(n_items: int, n_layers: int, batch_size: int, with_full: bool) -> int:
    """Forward passes `score_pair` makes (for progress bars)."""
    n_batches = -(-n_items // batch_size)
    return n_batches * (n_layers + 1 + int(with_full))


@dataclass
class UdsResult:
    """Everything a report needs. Arrays are aligned with `items` (N scored-or-KE-less examples)."""
    items: list[PreparedItem]
    skipped: list[SkippedItem]
    tau: float
    s1: PairScores
    s2: PairScores
    uds: list[float | None] = field(default_factory=list)

    @property
    def mean(self) -> float:
        return formula.model_uds(self.uds)

    @property
    def ke_layers(self) -> list[list[int]]:
        mask = formula.ke_mask(self.s1.deltas, self.tau)
        return [[l for l, k in zip(self.s1.layers, row) if k] for row in mask]


@dataclass(frozen=True)
class UdsModels:
    """The three models of one measurement: S1 patches `retain` into `full`, S2 `unlearned` into `full`.
    `retain` may be None when S1 is given (computed or cached before, the retain model released).
    A source may be its captured activations (`capture_sources`), the model itself released."""
    full: nn.Module
    retain: nn.Module | SourceValues | None
    unlearned: nn.Module | SourceValues


def compute_uds(models: UdsModels, examples: Examples, settings: EngineSettings, *, tau: float = formula.TAU,
                s1: PairScores | None = None, progress: Progress | None = None,
                runs: TargetRuns | None = None) -> UdsResult:
    """S1 (retain -> full, unless given, e.g. from the cache), S2 (unlearned -> full) and UDS.

    S2 reuses S1's full-model scores as its baseline, exactly as the reference does. On the fast
    path S1 and S2 share the target's capture pass of each batch; pass the same `runs` to calls
    for several unlearned models to capture the target only once.
    """
    settings.validate()
    full, retain, unlearned = models.full, models.retain, models.unlearned
    if s1 is None and retain is None:
        raise ValueError("compute_uds needs the retain model or a given S1")
    items, pad_id = list(examples.items), examples.pad_id
    captured = any(isinstance(m, SourceValues) for m in (retain, unlearned))
    modules = [m for m in (full, retain, unlearned) if isinstance(m, nn.Module)]
    if captured and not uses_fast_path(settings, *modules):
        raise ValueError("captured source values need the fast path for every model")
    if captured or uses_fast_path(settings, *modules):
        sources = [unlearned] if s1 is not None else [retain, unlearned]
        pairs = _fast_pairs(full, sources, items, settings, pad_id, progress,
                            None if s1 is None else s1.full_scores, runs)
        s1, s2 = (s1 or pairs[0]), pairs[-1]
    else:
        if s1 is None:
            s1 = score_pair(full, retain, items, settings, pad_id, progress)
        s2 = score_pair(full, unlearned, items, settings, pad_id, progress, full_scores=s1.full_scores)
    values = formula.per_example_uds(s1.deltas, s2.deltas, tau)
    return UdsResult(items, list(examples.skipped), tau, s1, s2, values)
