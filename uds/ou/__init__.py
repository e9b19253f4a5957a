"""The Open-Unlearning plug-in: UDS and every registry metric inside OU's own `src/eval.py` runs.

- `uds.ou.callback.RegisterUds`: a Hydra callback that registers the handlers below in OU's
  `evals.metrics.METRICS_REGISTRY` at run/job start (config `hydra/callbacks=uds`);
- handlers (`uds.ou.handlers`): `uds` (the evaluated model is OU's already loaded model; full and
  retain anchors are loaded once per process) and `uds_<key>` for every registry metric;
- configs (`hydra.searchpath=[pkg://uds.ou.configs]`): `eval/tofu_metrics/uds.yaml`,
  `eval/tofu_metrics/uds_<key>.yaml`, `hydra/callbacks/uds.yaml`, `experiment/eval/tofu/uds.yaml`.

This package imports metrics and checkpoints, so it sits in the top (command) layer.
"""
