"""The capacity experiment (spec-probes §1.2): bits per parameter of tiny Llamas trained on
uniform random sequences, with the fit capacity = alpha * params, CSV and plots.

    python experiments/capacity.py [--quick] [--bf16] [--max-steps N] [--out DIR]

The same as `uds capacity` (options: `uds capacity --help`).
"""

from __future__ import annotations

import sys

from uds.cli import main

if __name__ == "__main__":
    sys.exit(main(["capacity", *sys.argv[1:]]))
