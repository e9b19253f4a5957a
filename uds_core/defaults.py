"""Defaults that several layers and the command line share, in a module that imports nothing
(so a command can name them in its --help without loading torch)."""

MAX_NEW_TOKENS = 200                                 # greedy answers of the generation metrics (spec §4.2)
OU_SYSTEM_PROMPT = "You are a helpful assistant."    # Open-Unlearning's TOFU system turn (real models)
FISHER_FRACTIONS = (1e-4, 1e-3, 1e-2)                # the share of parameters each Fisher mask keeps (spec §4.5)
