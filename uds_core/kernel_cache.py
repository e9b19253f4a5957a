"""A bound on oneDNN's cache of compiled CPU kernels (torch's bfloat16 and many float32 matrix
products on x86 go through oneDNN).

oneDNN keeps every kernel it compiles, one per matrix shape, up to 1024 by default. The fast
engine's shapes change with every group of examples (sequence lengths, packed rows), so that cache
grows with each group until it holds 1024 kernels, which on a 1B model in bfloat16 is a large part
of the memory besides the weights (docs/llama1b.md). A pass reuses a few dozen shapes (the same
ones in every layer), so 128 entries keep nearly all of the reuse. Imports nothing heavy: the
command line calls it before torch is loaded.
"""

from __future__ import annotations

import os

ENV = "ONEDNN_PRIMITIVE_CACHE_CAPACITY"
CAPACITY = 128


def bound_kernel_cache(capacity: int = CAPACITY) -> None:
    """Cap the cache at `capacity` entries unless the environment already sets it. oneDNN reads
    the variable when it compiles its first kernel, so this must run before the process's first
    CPU matrix product to take effect."""
    os.environ.setdefault(ENV, str(capacity))
