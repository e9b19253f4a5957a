"""Memorisation capacity (spec-probes §1.2): models of a size grid (`models`), the grid runs
(`grid`), the fits (`fit`) and the figures and tables (`report`)."""
