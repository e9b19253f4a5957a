"""Campaigns: a zoo built and measured one unit at a time, each result a small committed file.

Running: `driver` (`Campaign`, the runner: build, measure, drop weights), `spec` (what it runs on),
`ledger` (the plan and which units the files hold), `order` (the members' order), `progress`
(counts, ETA, status lines), `anchors` (the anchors' fingerprints and the spread of a rebuild),
`alternates` (AltPO's answers beside the models), `protocol` (protocol.json's check), `machine`,
`files` (the folder's layout, sealing), `attack` (the attack campaign's zoo, order and units).
From the files alone: `read` (valid files), `status` (counts, what each statistic needs),
`assemble` (the meta-evaluation document), `outputs` (`uds meta-eval --from-campaign`),
`attack_assemble` (the attack result). Nothing is imported here, so that `meta_eval.measure` can
import `files` without the driver.
"""
