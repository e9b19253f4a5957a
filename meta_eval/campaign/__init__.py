"""Campaigns: a zoo built and measured one unit at a time, each result a small committed file.

`driver` (build and measure, one unit at a time; the protocol check), `files` (the folder's layout,
sealing), `attack` (the attack campaign's zoo, order and units), and from the files alone `read`
(valid files), `status` (counts, what each statistic needs), `assemble` (the meta-evaluation
document), `outputs` (`uds meta-eval --from-campaign`), `attack_assemble` (the attack result).
Nothing is imported here, so that `meta_eval.measure` can import `files` without the driver.
"""
