"""Hydra config files of the Open-Unlearning plug-in (`hydra.searchpath=[pkg://uds.ou.configs]`)."""
