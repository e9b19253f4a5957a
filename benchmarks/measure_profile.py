"""Where a meta-evaluation measurement spends its time: seconds and work per phase.

`PhaseClock` charges wall time to the innermost running phase (exclusive time, so phases add up
to the whole). `instrument(clock)` patches, for the duration of a `with` block, the few places
every measurement goes through:
- the work cache's computations, by kind (teacher-forced sweeps, generations, entity states,
  Fisher diagonals, base-LM scoring of generations, CKA / lens / masks);
- the UDS metric's engine call;
- the Measurer's model loads (as built, NF4) and relearning;
and counts, per phase, what the metric definitions ask of the model, whatever path computes it:
teacher-forced sequences, their tokens and labelled tokens; generation prompts, their tokens and
the tokens generated (to the first stop); Fisher / entity-state items and their tokens (up to the
last entity position). It also records every generation's token ids (to compare two paths), and
the model's forward calls. Nothing here changes a value.
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator
from unittest import mock

import torch

# work-cache kinds -> phase
WORK_PHASES = {"tf": "teacher_forced", "gen": "generation", "gens": "generation", "states": "representation",
               "fisher": "fisher", "cka": "representation", "lens": "representation",
               "fmasks": "representation", "basescore": "fluency"}
OTHER = "metric_formulas"   # everything not inside a named phase: the formulas, ROUGE scoring, I/O


@dataclass
class Counters:
    forward_calls: int = 0
    sequences: int = 0          # teacher-forced sequences / Fisher or state items
    tokens: int = 0             # their tokens (what a pass over them needs)
    labels: int = 0             # teacher-forced labelled tokens (logits needed there)
    prompts: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0


@dataclass
class PhaseClock:
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    counts: dict[str, Counters] = field(default_factory=lambda: defaultdict(Counters))
    generations: list[tuple[tuple[str, tuple[int, ...]], tuple[int, ...]]] = field(default_factory=list)
    stack: list[str] = field(default_factory=list)
    _t: float = field(default_factory=time.perf_counter)

    @property
    def current(self) -> str:
        return self.stack[-1] if self.stack else OTHER

    def _charge(self) -> None:
        now = time.perf_counter()
        self.seconds[self.current] += now - self._t
        self._t = now

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self._charge()
        self.stack.append(name)
        try:
            yield
        finally:
            self._charge()
            self.stack.pop()

    def reset(self) -> None:
        self._charge()
        self.seconds.clear()
        self.counts.clear()
        self.generations.clear()
        self._t = time.perf_counter()

    def snapshot(self) -> dict:
        self._charge()
        return {"seconds": {k: round(v, 3) for k, v in sorted(self.seconds.items())},
                "total_seconds": round(sum(self.seconds.values()), 3),
                "counts": {k: vars(c).copy() for k, c in sorted(self.counts.items())}}


def count_forwards(model: torch.nn.Module, clock: PhaseClock) -> torch.nn.Module:
    """Count the model's top-level forward calls into the clock's current phase."""
    if getattr(model, "_phase_counted", False):
        return model

    def pre(module, args, kwargs):
        clock.counts[clock.current].forward_calls += 1
    model.register_forward_pre_hook(pre, with_kwargs=True)
    model._phase_counted = True
    return model


def _timed(clock: PhaseClock, phase: str, fn: Callable, count_models: bool = False) -> Callable:
    def wrapper(*args, **kwargs):
        with clock.phase(phase):
            out = fn(*args, **kwargs)
        return count_forwards(out, clock) if count_models and isinstance(out, torch.nn.Module) else out
    return wrapper


@contextmanager
def instrument(clock: PhaseClock) -> Iterator[PhaseClock]:
    """Patch the measurement's shared paths to report into `clock` (see the module docstring)."""
    from uds_core import generation
    from meta_eval import measure
    from metrics import forward, hidden
    from metrics.work import WorkCache
    from uds_core import s1_cache

    memo = WorkCache.memo

    def timed_memo(self, key, make):
        phase = WORK_PHASES.get(key.kind)
        return memo(self, key, make if phase is None else _timed(clock, phase, make))

    greedy = generation.greedy_generate

    def counted_greedy(model, tok, prompts, opts, **kwargs):
        count_forwards(model, clock)
        gens = greedy(model, tok, prompts, opts, **kwargs)
        c = clock.counts[clock.current]
        c.prompts += len(prompts)
        c.prompt_tokens += sum(len(p) for p in prompts)
        c.generated_tokens += sum(len(g.ids) for g in gens)
        spec = (opts.desc or "").split(" ")[0]   # every generation's description starts with its model
        clock.generations.extend(((spec, tuple(p)), g.ids) for p, g in zip(prompts, gens))
        return gens

    tf = forward.teacher_forced_stats

    def counted_tf(model, encs, opts, **kwargs):
        count_forwards(model, clock)
        c = clock.counts[clock.current]
        c.sequences += len(encs)
        c.tokens += sum(len(e.input_ids) for e in encs)
        c.labels += sum(sum(1 for y in e.labels if y != -100) for e in encs)
        return tf(model, encs, opts, **kwargs)

    def counted_items(fn):
        def wrapper(model, items, *args, **kwargs):
            count_forwards(model, clock)
            c = clock.counts[clock.current]
            c.sequences += len(items)
            c.tokens += sum(it.eval_positions.stop for it in items)
            return fn(model, items, *args, **kwargs)
        return wrapper

    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(WorkCache, "memo", timed_memo))
        stack.enter_context(mock.patch.object(generation, "greedy_generate", counted_greedy))
        stack.enter_context(mock.patch.object(forward, "teacher_forced_stats", counted_tf))
        for name in ("fisher_diagonal", "capture_entity_states"):
            stack.enter_context(mock.patch.object(hidden, name, counted_items(getattr(hidden, name))))
        # the UDS metric imports cached_uds when it runs, so the module's attribute is the one it calls
        stack.enter_context(mock.patch.object(s1_cache, "cached_uds", _timed(clock, "uds", s1_cache.cached_uds)))
        for name in ("_load_orig", "_load_nf4", "_load_relearned", "_anchor"):
            phase = "loading_nf4" if name == "_load_nf4" else "loading"
            stack.enter_context(mock.patch.object(measure.Measurer, name,
                                                  _timed(clock, phase, getattr(measure.Measurer, name), True)))
        stack.enter_context(mock.patch.object(measure, "ensure_relearned",
                                              _timed(clock, "relearning", measure.ensure_relearned)))
        yield clock
