"""Progress of long steps in both modes: a tqdm bar on a terminal, timestamped lines otherwise.

A cluster job, `nohup` or CI writes stderr to a file, where tqdm's bar either vanishes
(`disable=None`) or fills the log with carriage returns. There `progress()` prints one plain line
every `UDS_PROGRESS_INTERVAL` seconds (default 10) and one when a step that
lasted that long ends:

    2026-12-02 00:15:03 train full: 120/480 steps (25%), 3.1 steps/s, ETA 0:01:56, loss=2.31

`set_quiet(True)` (the CLI's `--quiet`, or `UDS_QUIET=1` in the environment, which worker
processes inherit) silences both modes.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime, timedelta
from typing import Any, Iterable, Iterator, TextIO

QUIET_ENV = "UDS_QUIET"
INTERVAL_ENV = "UDS_PROGRESS_INTERVAL"
DEFAULT_INTERVAL_S = 10.0


def set_quiet(quiet: bool) -> None:
    """Silence (or re-enable) progress in this process and in the processes it starts."""
    if quiet:
        os.environ[QUIET_ENV] = "1"
    else:
        os.environ.pop(QUIET_ENV, None)


def is_quiet() -> bool:
    return os.environ.get(QUIET_ENV, "") not in ("", "0")


def _interval() -> float:
    try:
        return max(0.0, float(os.environ.get(INTERVAL_ENV, DEFAULT_INTERVAL_S)))
    except ValueError:   # a malformed value must not break a long run; fall back to the default
        return DEFAULT_INTERVAL_S


def _plural(unit: str) -> str:
    """English plural of a unit name: step -> steps, pass -> passes, batch -> batches."""
    return unit + ("es" if unit.endswith(("s", "sh", "ch", "x")) else "s")


def _duration(seconds: float) -> str:
    return str(timedelta(seconds=int(round(seconds))))


class LineProgress:
    """tqdm's small interface (update, set_postfix, set_description, total, n, close) as log lines."""

    def __init__(self, iterable: Iterable | None = None, *, total: int | None = None, desc: str = "",
                 unit: str = "step", initial: int = 0, file: TextIO | None = None,
                 interval: float | None = None, clock=time.monotonic) -> None:
        self.iterable = iterable
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.total, self.desc, self.unit = total, desc, unit
        self.n, self.initial = initial, initial
        self.file = file
        self.interval = _interval() if interval is None else interval
        self._clock = clock
        self._start = clock()
        self._last = self._start
        self._postfix = ""
        self._closed = False
        self._emitted = False

    # -- tqdm-compatible surface -------------------------------------------------------------
    def update(self, n: int = 1) -> None:
        self.n += n
        now = self._clock()
        if now - self._last >= self.interval:
            self._last = now
            self._emit(now)

    def set_postfix(self, **kwargs: Any) -> None:
        self._postfix = ", ".join(f"{k}={v}" for k, v in kwargs.items())

    def set_postfix_str(self, s: str) -> None:
        self._postfix = s

    def set_description(self, desc: str) -> None:
        self.desc = desc

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            now = self._clock()
            if self._emitted or now - self._start >= self.interval:   # short steps stay silent
                self._emit(now, final=True)

    def __iter__(self) -> Iterator:
        for item in self.iterable or ():
            yield item
            self.update(1)
        self.close()

    def __enter__(self) -> "LineProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- formatting ----------------------------------------------------------------------------
    def line(self, now: float, final: bool = False) -> str:
        """The text of one progress line (without the timestamp) at clock time `now`."""
        elapsed = max(now - self._start, 1e-9)
        rate = (self.n - self.initial) / elapsed
        units = _plural(self.unit)
        if self.total:
            parts = [f"{self.n}/{self.total} {units} ({100.0 * self.n / self.total:.0f}%)"]
        else:
            parts = [f"{self.n} {units}"]
        parts.append(f"{rate:.3g} {units}/s")
        if final:
            parts.append(f"done in {_duration(elapsed)}")
        elif self.total and rate > 0:
            parts.append(f"ETA {_duration((self.total - self.n) / rate)}")
        if self._postfix:
            parts.append(self._postfix)
        return f"{self.desc}: " + ", ".join(parts)

    def _emit(self, now: float, final: bool = False) -> None:
        self._emitted = True
        stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        out = self.file or sys.stderr
        print(f"{stamp} {self.line(now, final)}", file=out, flush=True)


class _Silent(LineProgress):
    def _emit(self, now: float, final: bool = False) -> None:
        pass


def progress(iterable: Iterable | None = None, *, total: int | None = None, desc: str = "",
             unit: str = "step", initial: int = 0, file: TextIO | None = None, leave: bool = False,
             enabled: bool = True):
    """A progress tracker for one long step: tqdm on a terminal, `LineProgress` otherwise.

    `enabled=False` (a caller's own `progress=False`) or quiet mode gives a silent tracker that
    still counts, so callers never branch on it.
    """
    stream = file or sys.stderr
    if not enabled or is_quiet():
        return _Silent(iterable, total=total, desc=desc, unit=unit, initial=initial, file=stream)
    if getattr(stream, "isatty", lambda: False)():
        from tqdm.auto import tqdm   # only here: tqdm.auto pulls in IPython checks

        return tqdm(iterable, total=total, desc=desc, unit=unit, initial=initial, file=stream, leave=leave,
                    mininterval=0.5)
    return LineProgress(iterable, total=total, desc=desc, unit=unit, initial=initial, file=stream)
