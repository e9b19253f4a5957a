"""Running a world campaign: each missing unit in order, as a child process, sealed, committed.

The campaign folder holds `protocol.json` (fixed by the first run; a later run under another
protocol stops) and one sealed file per finished unit, `<kind>/<model>.json`: the unit's result,
the recipe digests of the models it used, the code commit it ran on (and whether the checkout had
uncommitted changes), its seconds and the peak resident memory of its process, the machine, and
`prepared`: the weights digest of every built model it read and the seconds of any rebuild (a
fresh machine rebuilds them from their recipes in a process before the unit's). A
unit is done when its file is whole and was made for the recipes of the protocol. A stop (a
signal, a crash, another machine) loses at most the unit in flight; the next run continues from
the files.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from uds.cpu_bf16 import ENV
from uds.world_campaign import preflight
from uds.world_campaign.plan import SCORE_DTYPE, Unit, plan_units, protocol
from uds_core import atomic
from uds_core.errors import UdsInputError
from uds_core.sealed import read_sealed, seal

Publish = Callable[[list[Path], str], None]


class WorldCampaign:
    def __init__(self, zoo: str, root: Path, publish: Publish = lambda paths, msg: None,
                 bigmem_lock: str | None = None, log: Callable[[str], None] = lambda s: print(s, file=sys.stderr,
                                                                                                flush=True)):
        from checkpoints.catalogue import recipes
        from checkpoints.specs import parse_tiny_zoo
        from checkpoints.world.recipe_digest import recipe_digest
        from checkpoints.world.presets import get_preset

        world = parse_tiny_zoo(zoo)
        if world is None:
            raise UdsInputError(f"--zoo {zoo}: a world campaign takes a tiny-world zoo (tiny:<preset>[-<seed>])")
        self.zoo, self.root, self.publish, self.bigmem_lock, self.log = zoo, Path(root), publish, bigmem_lock, log
        self.products: str | None = None   # how the units compute bfloat16 products, decided by `run`
        self.preset, self.seed = get_preset(world[0]), world[1]
        zoo_recipes = [r for r in recipes(self.preset) if r.kind in ("full", "retain", "unlearned")]
        self.digests = {r.name: recipe_digest(self.preset, r, seed=self.seed) for r in zoo_recipes}
        self.units = plan_units([(r.name, r.kind, r.method) for r in zoo_recipes])
        # as the file holds it (tuples become lists), so that a rerun compares like with like
        self.protocol = json.loads(json.dumps(protocol(zoo, self.preset, self.seed, self.units, self.digests)))

    # --- files -----------------------------------------------------------------------------
    def path(self, unit: Unit) -> Path:
        return self.root / unit.kind / f"{unit.model}.json"

    def used_digests(self, unit: Unit) -> dict[str, str]:
        """The recipe digests of the models a unit's result depends on."""
        names = {unit.model} | ({"full", "retain"} if unit.kind in ("score", "exactness", "precision", "metrics")
                                else set())
        return {n: self.digests[n] for n in sorted(names) if n in self.digests}

    def dtypes(self) -> set[str]:
        """The dtypes its units train and score in."""
        return {str(self.preset.train_dtype), SCORE_DTYPE}

    def prerequisites(self, unit: Unit) -> list[str]:
        """The built models a unit reads, parents first: a build's parents, or the models of
        `used_digests` (a pretrained base is never built)."""
        from checkpoints.world.build import lineage

        if unit.kind == "build":
            return lineage(self.preset, unit.model)[:-1]
        return [n for n in dict.fromkeys(("full", "retain", unit.model)) if n in self.used_digests(unit)]

    def result(self, unit: Unit) -> dict | None:
        """The unit's committed document when it is whole and of the protocol's recipes."""
        doc, _ = read_sealed(self.path(unit))
        return doc if doc is not None and doc.get("recipes") == self.used_digests(unit) else None

    def done(self, unit: Unit) -> bool:
        return self.result(unit) is not None

    def check_protocol(self, write: bool, *, refix: bool = False) -> None:
        """Write the protocol when there is none (`write`); else refuse another one. `refix`: while
        no unit file exists, another protocol replaces the fixed one (said on stderr)."""
        from meta_eval.campaign.protocol import protocol_verdict

        path = self.root / "protocol.json"
        doc, problem = read_sealed(path)
        if doc is None and path.exists():
            raise UdsInputError(f"{path} is damaged ({problem}); restore it from git")
        unmeasured = not any(self.path(u).exists() for u in self.units)
        verdict, diff = protocol_verdict(doc, self.protocol, unmeasured=unmeasured, write=write,
                                         refix=write and refix)
        if verdict == "refix":
            self.log(f"campaign: {path} fixed again (no unit was measured under it; changed: {', '.join(diff)})")
        if verdict in ("fix", "refix"):
            atomic.write_json(path, seal(self.protocol), indent=1, sort_keys=True)
            self.publish([path], f"campaign {self.zoo}: protocol")
        if verdict == "refused":
            hint = ("`uds campaign protocol --plan world` fixes it again for this code (no unit is measured yet)"
                    if unmeasured else "start a new campaign folder, or restore the code that made it")
            raise UdsInputError(f"the campaign in {self.root} was fixed under another protocol (differs in: "
                                f"{', '.join(diff)}); {hint}")

    # --- status ----------------------------------------------------------------------------
    def status(self) -> dict:
        done = [u for u in self.units if self.done(u)]
        seconds = {}
        for u in done:
            seconds.setdefault(u.kind, []).append(self.result(u)["seconds"])
        todo = [u for u in self.units if u not in done]
        guess = {k: sorted(v)[len(v) // 2] for k, v in seconds.items()}
        eta = sum(guess.get(u.kind, 3600.0) for u in todo)
        return {"zoo": self.zoo, "units": len(done), "units_total": len(self.units),
                "next": todo[0].id if todo else None, "median_seconds": guess, "eta_seconds": round(eta),
                "todo": [u.id for u in todo]}

    # --- running ---------------------------------------------------------------------------
    def run(self, max_units: int | None = None) -> int:
        """Run the missing units in order (at most `max_units`); how their bfloat16 products are
        computed is decided once, before the first (preflight.py), and holds for every unit."""
        self.check_protocol(write=True)
        if not all(self.done(u) for u in self.units):
            ratio, self.products = preflight.choose(self.dtypes())
            if self.products is not None:
                measured = "" if ratio is None else f"bfloat16 / float32 matrix product time on this CPU {ratio:.2f}; "
                self.log(f"campaign {self.zoo}: {measured}bfloat16 products computed "
                         + ("through float32 kernels" if self.products == "float32" else "by torch's own kernels"))
        ran = 0
        previous = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            st = self.status()
            self.log(f"campaign {self.zoo}: {st['units']}/{st['units_total']} units done")
            for unit in self.units:
                if max_units is not None and ran >= max_units:
                    break
                if self.done(unit):
                    continue
                self.run_unit(unit)
                ran += 1
        except Stopped:
            self.log(f"campaign {self.zoo}: stopped by a signal after {ran} unit(s); run the same command to continue")
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
        st = self.status()
        self.log(f"campaign {self.zoo}: {st['units']}/{st['units_total']} units done"
                 + (f"; next {st['next']}" if st["next"] else "; complete"))
        return ran

    def child(self, kind: str, model: str, label: str, big: bool = False) -> tuple[dict, float, int]:
        """(result, seconds, peak resident bytes) of `units KIND MODEL` run in a process of its own."""
        scratch = Path(tempfile.mkdtemp(prefix=f"uds-campaign-{kind}-"))
        out = scratch / "result.json"
        cmd = [sys.executable, "-m", "uds.world_campaign.units", kind, model, "--zoo", self.zoo,
               "--out", str(out), "--scratch", str(scratch / "work")]
        t0 = time.time()
        try:
            with self.lock_if(big):
                rc, peak = run_child(cmd, {ENV: self.products} if self.products else {})
            if rc != 0:
                raise UdsInputError(f"campaign {self.zoo}: {label} failed (exit {rc}); its output is above. "
                                    "Fix the cause and run the same command to continue")
            return json.loads(out.read_text()), round(time.time() - t0, 1), peak
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def run_unit(self, unit: Unit) -> None:
        code = code_state()
        self.log(f"campaign {self.zoo}: {unit.id} starting "
                 f"(code {code['commit'][:12]}{' + changes' if code['dirty'] else ''})")
        prepared = None
        if names := self.prerequisites(unit):
            # its own process: a rebuild on a fresh machine is neither the unit's time nor its memory
            res, seconds, peak = self.child("prepare", ",".join(names), f"preparing {unit.id}")
            prepared = {"models": res["models"], "seconds": seconds, "peak_rss_bytes": peak}
        result, seconds, peak = self.child(unit.kind, unit.model, f"unit {unit.id}", unit.big)
        doc = {"unit": unit.id, "kind": unit.kind, "model": unit.model, "zoo": self.zoo,
               "recipes": self.used_digests(unit), "code": code, "seconds": seconds, "prepared": prepared,
               "peak_rss_bytes": peak, "machine": machine() | {"bf16_products": self.products},
               "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "result": result}
        path = atomic.write_json(self.path(unit), seal(doc), indent=1, sort_keys=True, allow_nan=True)
        st = self.status()
        self.log(f"campaign {self.zoo}: {unit.id} done in {doc['seconds']:.0f} s, peak {peak / 1e9:.2f} GB "
                 f"({st['units']}/{st['units_total']}; ETA {st['eta_seconds'] / 3600:.1f} h)")
        self.publish([path], f"campaign {self.zoo}: {unit.id} ({st['units']}/{st['units_total']})")

    @contextmanager
    def lock_if(self, big: bool):
        """Hold the big-memory lock (a file other jobs of the machine flock too) around a big unit."""
        if not (big and self.bigmem_lock):
            yield
            return
        with open(self.bigmem_lock, "a") as fh:
            self.log(f"campaign {self.zoo}: waiting for the big-memory lock {self.bigmem_lock}")
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)


class Stopped(BaseException):
    """A signal asked the campaign to stop (after the child in flight is ended)."""


_CHILD: subprocess.Popen | None = None


def _stop(signum, frame) -> None:
    if _CHILD is not None and _CHILD.poll() is None:
        _CHILD.terminate()
    raise Stopped(signal.Signals(signum).name)


def run_child(cmd: list[str], env: dict[str, str] | None = None) -> tuple[int, int]:
    """(exit status, peak resident bytes) of `cmd` run with one torch thread and `env` added to
    ours, its output on ours."""
    global _CHILD
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **(env or {})}
    _CHILD = subprocess.Popen(cmd, env=env)
    try:
        _, status, usage = os.wait4(_CHILD.pid, 0)
    finally:
        child, _CHILD = _CHILD, None
    child.returncode = os.waitstatus_to_exitcode(status)
    return child.returncode, int(usage.ru_maxrss) * 1024


def code_state() -> dict:
    """The commit the checkout is at and whether it has uncommitted changes to tracked files."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
    return {"commit": head.stdout.strip() or "unknown", "dirty": bool(dirty.stdout.strip())}


def machine() -> dict:
    import torch

    from meta_eval.campaign.machine import cpu_name

    return {"cpu": cpu_name(), "platform": platform.platform(), "torch": torch.__version__, "threads": 1,
            "cores": os.cpu_count()}
