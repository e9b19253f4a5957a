"""Unlearning Depth Score, the front door: the command line (`uds ...`, `python -m uds`), the
commands, `uds.score` (UDS from Python, `uds.api`), the Open-Unlearning plug-in (`uds.ou`) and the
device/executor flags. The foundation is `uds_core`; above it `checkpoints`, `metrics`, then
`meta_eval` and `uds_analyses`."""

from uds.version import __version__

__all__ = ["Score", "score", "__version__"]


def __getattr__(name: str):
    # imported on first use: `import uds` (and the command line's start) stays free of torch
    if name in ("Score", "score"):
        from uds import api
        return getattr(api, name)
    raise AttributeError(f"module 'uds' has no attribute {name!r}")
