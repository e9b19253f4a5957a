"""Limited-memory LM (LMLM) pieces: the fact database, its tiny-world variants, the lookup markup,
the splice-generation loop and the trainers of `tiny:<preset>/lmlm` and `lmlm_parametric`."""
