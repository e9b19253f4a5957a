"""The eight unlearning methods of spec §8 and the tiny world's unlearned/P/N zoo.

Modules: `losses` (the method registry: loss functions, defaults, reference need), `data` (paired
forget/retain items), `alternates` (AltPO's alternate answers), `trainer` (the one unlearning
loop, also `unlearn` for any Hugging Face causal LM), `pools` (P/N pool training data),
`zoo_recipes` (the grids per preset), `effect` (the forget/retain/holdout hit-rate table).
`checkpoints.catalogue` lists these recipes and trainers with the core ones.
"""
