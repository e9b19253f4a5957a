"""Automatic entity spans for QA records that have none (`uds annotate`; `uds score` on plain QA).

Method, in order, per record (`annotate.annotate_record`; the method is recorded per record as
`span_method`):

1. `polar`: a yes/no question (it opens with an auxiliary verb) answered "Yes..." or "No...":
   the entity is that word, with an empty prefix (the rule of the hand annotations, spec §1).
2. `perturbation`: TOFU-format records carry wrong answers written by editing the answer or its
   paraphrase. The answer words those edits replace are the fact (`salience`); the entity starts
   at the first such word that the question does not already say and runs to the end of its
   phrase (`extent`). Needs no model: a word alignment (difflib) of the perturbed answers with
   the text they were written from.
3. `question`: plain (question, answer) records, or perturbed answers that change nothing the
   answer says: the entity starts at the first content word the question does not contain.

A record where no rule finds a start has no span: it is listed and left out, never guessed.
"""
