"""Unlearning Depth Score, the front door: the command line (`uds ...`, `python -m uds`), the
commands, the Open-Unlearning plug-in (`uds.ou`) and the device/executor flags. The foundation is
`uds_core`; above it `checkpoints`, `metrics`, then `meta_eval` and `uds_analyses`."""

__version__ = "0.1.0"
