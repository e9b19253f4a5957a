"""`uds_core.quiet`: the dependencies come up quiet, and quieting them imports none of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json, logging, sys
from uds_core.quiet import quiet_libraries
quiet_libraries()
heavy_before = sorted(m for m in ("torch", "transformers", "bitsandbytes") if m in sys.modules)
from transformers.utils import logging as hf
print(json.dumps({"heavy_before": heavy_before, "verbosity": hf.get_verbosity(),
                  "bars": hf.is_progress_bar_enabled(),
                  "bnb": logging.getLogger("bitsandbytes.backends.cpu.ops").getEffectiveLevel()}))
"""


def test_quiet_libraries_in_a_fresh_interpreter():
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRANSFORMERS_VERBOSITY", "HF_HUB_DISABLE_PROGRESS_BARS")}
    r = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["heavy_before"] == []
    assert got["verbosity"] == 40 and got["bars"] is False   # logging.ERROR; transformers read the env at import
    assert got["bnb"] == 40
