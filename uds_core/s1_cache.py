"""S1 cache (spec §2.7, with a stronger key): S1 depends only on full, retain, the inputs and
the numeric settings, so it is computed once and reused for every unlearned model.

Key = model fingerprints (not names), data hash, hash of the prepared token ids and spans,
prompt format, component, dtype, device, batch size, attention kernel, logprob dtype, layers,
the last-layer flag and, for bfloat16 on the CPU, whether its products ran through float32 kernels.
Batch size and kernel are in the key because they perturb low-precision
scores; keeping S1 and S2 under identical settings keeps UDS(retain) = 1 exact. Deltas are
stored, not KE statuses, so tau is not in the key. One JSON file per key, written atomically
and sealed with the digest of its content (`uds_core.sealed`): an entry changed on disk, even by one
byte that keeps it valid JSON, is said in one line and recomputed, never used. An entry written
before digests (no `digest`, the older keys exactly) is sealed as it is on first read, once.
"""

from __future__ import annotations

import hashlib
import json
import sys
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np
import torch

from uds_core import atomic, engine, float32_products, sealed
from uds_core.arch import attention_implementation
from uds_core.data import data_hash
from uds_core.engine import EngineSettings, PairScores
from uds_core.fingerprint import model_fingerprint
from uds_core.paths import s1_cache_dir
from uds_core.prompts import PROMPT_FORMAT, Examples, PreparedItem

CACHE_VERSION = 1
LEGACY_KEYS = frozenset({"config", "layers", "entries"})   # an entry written before digests


def items_hash(items: Sequence[PreparedItem]) -> str:
    """SHA-256 of what the engine consumes: idx, token ids, prompt length and entity span."""
    canon = [[str(it.idx), list(it.input_ids), len(it.prompt_ids), list(it.span)] for it in items]
    return hashlib.sha256(json.dumps(canon).encode()).hexdigest()


def cache_key(**settings: Any) -> dict:
    """The key as a JSON-safe dict (values stringified where needed), with the format version."""
    key = {k: (list(v) if isinstance(v, tuple) else v) for k, v in settings.items()}
    key["cache_version"] = CACHE_VERSION
    return json.loads(json.dumps(key, sort_keys=True, default=str))


def dtype_name(dtype: torch.dtype) -> str:
    """"float32", "bfloat16", ... (as the key and the reports write it)."""
    return str(dtype).replace("torch.", "")


def s1_key(fingerprints: dict, records: list[dict], items: Sequence[PreparedItem], settings: EngineSettings,
           dtype: torch.dtype, device: str, full: torch.nn.Module | dict) -> dict:
    """The S1 cache key of (full, retain) = `fingerprints["full"]`, `["retain"]` on `records` prepared
    as `items`, under the engine `settings` in `dtype` on `device`: one definition for `uds score`,
    the `uds` registry metric and every other caller, so they share cached S1 runs. `full`: the
    full model, or its `run_facts` taken while it was loaded."""
    facts = full if isinstance(full, dict) else run_facts(settings, full)
    return cache_key(
        full=fingerprints["full"], retain=fingerprints["retain"], data=data_hash(records), inputs=items_hash(items),
        prompt_format=PROMPT_FORMAT, component=settings.component, dtype=dtype_name(dtype),
        device=device, batch_size=settings.batch_size, logprob_dtype=settings.logprob_dtype,
        reference_last_layer=settings.reference_last_layer, **facts, **_products(dtype, device))


def _products(dtype: torch.dtype, device: str) -> dict:
    """The key's note of bfloat16 CPU products run through float32 kernels (`uds_core.float32_products`):
    they round differently from torch's own bfloat16 kernels, so an S1 of one path must not be the S1 of
    a run on the other. Empty on every other path, so the keys written before this note still match."""
    return {"bf16_products": "float32"} if float32_products.route(device, dtype) == "float32" else {}


def run_facts(settings: EngineSettings, full: torch.nn.Module) -> dict:
    """What of the loaded full model the key holds: its layers, attention kernel and algorithm."""
    return {"layers": settings.layer_list(full), "attn_implementation": attention_implementation(full),
            "algorithm": engine.algorithm_tag(settings, full)}


def cache_path(key: dict, folder: Path | None = None) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return (folder or s1_cache_dir()) / f"s1_{digest}.json"


def save_s1(key: dict, items: Sequence[PreparedItem], s1: PairScores, folder: Path | None = None) -> Path:
    """Write the entry atomically (temp file in the same folder, then os.replace)."""
    deltas = s1.deltas
    entries = [{"idx": it.idx, "full_score": float(s1.full_scores[i]),
                "s1_scores": [float(x) for x in s1.patched[i]], "s1_deltas": [float(x) for x in deltas[i]]}
               for i, it in enumerate(items)]
    path = cache_path(key, folder)
    atomic.write_json(path, sealed.seal({"config": key, "layers": list(s1.layers), "entries": entries}))
    return path


def load_s1(key: dict, items: Sequence[PreparedItem], folder: Path | None = None) -> PairScores | None:
    """The cached S1 for exactly these items, or None (a damaged entry is said and not used)."""
    path = cache_path(key, folder)
    checked = sealed.read_checked(path, LEGACY_KEYS)
    try:
        if checked.problem:
            raise ValueError(checked.problem)
        s1 = None if checked.doc is None else _parse(checked.doc, key, items)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        # one line, then recomputed and overwritten: a damaged entry is never used
        print(f"S1 cache entry {path} is unusable ({exc}); recomputing S1", file=sys.stderr, flush=True)
        return None
    if checked.legacy and s1 is not None:
        atomic.write_json(path, sealed.seal(checked.doc))
        print(f"S1 cache entry {path} was written before content digests; sealed as it is "
              "(checked on every later use)", file=sys.stderr, flush=True)
    return s1


def _parse(payload: dict, key: dict, items: Sequence[PreparedItem]) -> PairScores | None:
    if payload["config"] != key:
        return None  # a hash collision or an older format: not ours
    entries, layers = payload["entries"], [int(l) for l in payload["layers"]]
    if [str(e["idx"]) for e in entries] != [str(it.idx) for it in items]:
        raise ValueError("its examples differ from this run's")
    full = np.array([float(e["full_score"]) for e in entries], dtype=np.float64)
    if any(len(e["s1_scores"]) != len(layers) for e in entries):
        raise ValueError(f"an entry does not hold {len(layers)} layer scores")
    patched = np.array([[float(x) for x in e["s1_scores"]] for e in entries], dtype=np.float64)
    return PairScores(layers, full, patched.reshape(len(entries), len(layers)))


@dataclass
class CachedUds:
    """UDS with S1 read from (or written to) the cache: the result, the cache state ("hit", "miss"
    or "off") and the key (its `data` and `algorithm` entries go into reports)."""
    result: engine.UdsResult
    state: str
    key: dict


@dataclass(frozen=True)
class CacheUse:
    """How one UDS call keys and uses the S1 cache: the `dtype` and `device` the models run in,
    the caller's {"full", "retain"} `fingerprints` when it has them (else hashed from the weights),
    and `enabled=False` to neither read nor write it."""
    dtype: torch.dtype
    device: str
    enabled: bool = True
    fingerprints: dict | None = None


class Meter(Protocol):
    """What a progress bar shows of a UDS call (tqdm and `LineProgress` both are one): the
    number of forward passes, set once known, and the passes done."""
    total: int | None

    def update(self, n: int = 1) -> object: ...


def cached_uds(models: engine.UdsModels, examples: Examples, settings: EngineSettings, cache: CacheUse, *,
               tau: float, s1: PairScores | None = None, meter: Meter | None = None,
               runs: engine.TargetRuns | None = None) -> CachedUds:
    """The one load-or-compute of S1 and UDS: `uds score`, the `uds` registry metric and the
    Open-Unlearning handler all come here. S1 is `s1` when the caller already holds it, else the
    cached entry, else computed together with S2 (the fast path shares the full model's capture
    pass) and saved. `meter.total` is set to the number of forward passes once it is known (S1
    cached or not), `meter.update(k)` told each k passes done. `runs`: the full model's capture
    passes kept between calls (`engine.TargetRuns`), for a caller scoring many unlearned models,
    or one model as it trains, against one full model. `models.retain` may be None when `s1` is
    given (see `cached_s1` for computing S1 first and dropping the retain model before S2)."""
    full, items = models.full, examples.items
    key = _key(models.full, models.retain, examples, settings, cache)
    use_cache = cache.enabled and bool(items)
    # one lock per entry: a second process needing the same S1 waits for the first, then reads it
    with atomic.file_lock(cache_path(key)) if s1 is None and use_cache else nullcontext():
        cached = s1 if s1 is not None else (load_s1(key, items) if use_cache else None)
        if meter is not None:
            meter.total = _passes(len(items), len(settings.layer_list(full)), settings.batch_size, cached is None)
        result = engine.compute_uds(models, examples, settings, tau=tau, s1=cached,
                                    progress=None if meter is None else meter.update, runs=runs)
        if use_cache and cached is None:
            save_s1(key, items, result.s1)
    state = "off" if not cache.enabled else ("hit" if cached is not None else "miss")
    return CachedUds(result, state, key)


def cached_s1(full: torch.nn.Module, retain: torch.nn.Module, examples: Examples, settings: EngineSettings,
              cache: CacheUse, *, meter: Meter | None = None) -> tuple[PairScores, str, dict]:
    """S1 alone, from the cache or computed (retain -> full) and saved: (S1, "hit" / "miss" / "off",
    key). With it, a caller holds only full and retain for S1 and only full and the unlearned model
    for S2 (`cached_uds(..., s1=...)`): two models in memory at a time instead of three, for one
    more capture pass of the full model per batch than the joint run when S1 is not cached.
    `meter.total` counts both stages' passes."""
    items = examples.items
    key = _key(full, retain, examples, settings, cache)
    use_cache = cache.enabled and bool(items)
    n_layers = len(settings.layer_list(full))
    with atomic.file_lock(cache_path(key)) if use_cache else nullcontext():
        s1 = load_s1(key, items) if use_cache else None
        state = "off" if not cache.enabled else ("hit" if s1 is not None else "miss")
        if meter is not None:
            meter.total = _passes(len(items), n_layers, settings.batch_size, s1 is None)
        if s1 is None:
            s1 = engine.score_pair(full, retain, list(items), settings, examples.pad_id,
                                   None if meter is None else meter.update)
            if use_cache:
                save_s1(key, items, s1)
    return s1, state, key


class RoleModels(Protocol):
    """The three models of a UDS run by role ("full", "retain", "unlearned"), loaded on demand:
    `load` gives the model (loading it when it is not held), `fingerprint` its fingerprint (taken
    when it was loaded), `release` lets it go (the memory returns once no role holds it)."""

    def load(self, role: str) -> torch.nn.Module: ...

    def fingerprint(self, role: str) -> str: ...

    def release(self, role: str) -> None: ...


def one_at_a_time_uds(models: RoleModels, examples: Examples, settings: EngineSettings, cache: CacheUse, *,
                      tau: float, meter: Meter | None = None) -> CachedUds | None:
    """`cached_uds` with one model's weights in use at a time: the full model is loaded for its
    fingerprint and released; the retain model (S1 not cached) and the unlearned one each capture
    their activations at the patch sites (`engine.capture_sources`) and are released; the full
    model, loaded again, then runs S1 and S2 together on those values. Same numbers, bit for bit,
    as the joint run (the same passes); the price is loading the full model twice. None when a
    model cannot take the fast path (the caller holds two at a time then); a source captured before
    that was found is dropped.
    `cache.fingerprints` is not used: `models` gives them."""
    full = models.load("full")
    if not engine.uses_fast_path(settings, full):
        return None
    facts = run_facts(settings, full)
    del full
    models.release("full")
    models.load("retain")
    fps = {role: models.fingerprint(role) for role in ("full", "retain")}
    items = examples.items
    key = s1_key(fps, list(examples.records), items, settings, cache.dtype, cache.device, facts)
    use_cache = cache.enabled and bool(items)
    tick = None if meter is None else meter.update
    with atomic.file_lock(cache_path(key)) if use_cache else nullcontext():
        s1 = load_s1(key, items) if use_cache else None
        if meter is not None:
            meter.total = _passes(len(items), len(facts["layers"]), settings.batch_size, s1 is None)
        if s1 is not None:
            models.release("retain")
        values = {}
        for role in ("retain", "unlearned") if s1 is None else ("unlearned",):
            source = models.load(role)
            if not engine.uses_fast_path(settings, source):
                return None
            values[role] = engine.capture_sources(source, items, settings, examples.pad_id, tick)
            del source
            models.release(role)
        result = engine.compute_uds(engine.UdsModels(models.load("full"), values.get("retain"), values["unlearned"]),
                                    examples, settings, tau=tau, s1=s1, progress=tick)
        if use_cache and s1 is None:
            save_s1(key, items, result.s1)
    state = "off" if not cache.enabled else ("hit" if s1 is not None else "miss")
    return CachedUds(result, state, key)


def _key(full: torch.nn.Module, retain: torch.nn.Module | None, examples: Examples, settings: EngineSettings,
         cache: CacheUse) -> dict:
    fps = cache.fingerprints or {"full": model_fingerprint(full), "retain": model_fingerprint(retain)}
    return s1_key(fps, list(examples.records), examples.items, settings, cache.dtype, cache.device, full)


def _passes(n_items: int, n_layers: int, batch_size: int, with_s1: bool) -> int:
    """Forward passes of S2 (and of S1 when it is computed), for progress bars."""
    total = engine.passes_per_pair(n_items, n_layers, batch_size, with_full=False)
    if with_s1:
        total += engine.passes_per_pair(n_items, n_layers, batch_size, with_full=True)
    return total
