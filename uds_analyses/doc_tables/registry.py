"""Every generated block of the docs (probe, audit, mem_bits, smol, smol_meta_eval, smol_attacks, reliability,
curves, results, the design page's metric keys) and the README, with its file."""

from __future__ import annotations

from uds_analyses.doc_tables import (attacks, audit, campaign, campaign_protocol, capacity, curves, llama1b, measure,
                                     mem_bits, metric_keys, probe, qwen, reliability, reproduce, smol, spans)
from uds_analyses.doc_tables.blocks import Block

# the long-passage probe: per-level, per-position and per-start tables of each source,
# on the `test` world and on the real-model `smol` world
PASSAGE_BLOCKS: list[Block] = [
    Block("docs/probe.md", f"probe-{tag}-{kind}-{world}", f"results/probe/{tag.replace('-', '_')}_{world}.json", render)
    for world in ("test", "smol")
    for tag in ("passages", "passages-bios")
    for kind, render in (("levels", probe.passages_level_table), ("positions", probe.passages_position_table),
                         ("starts", probe.passages_start_table))]

# the smol campaign's meta-evaluation: one snapshot of the campaign folder, assembled by
# `uds meta-eval --from-campaign`; the page moves only when that snapshot is regenerated
CAMPAIGN_SNAPSHOT = "results/smol/campaign_meta_eval/meta_eval.json"
CAMPAIGN_ASSEMBLE = "uds meta-eval --from-campaign results/smol/campaign --out results/smol/campaign_meta_eval"
CAMPAIGN_COMMAND = CAMPAIGN_ASSEMBLE + " && python benchmarks/doc_tables.py"
# the same assembly without spec §5.5's filters, beside the filtered one
CAMPAIGN_NO_FILTERS = "results/smol/campaign_meta_eval_no_filters/meta_eval.json"
CAMPAIGN_NO_FILTERS_COMMAND = ("uds meta-eval --from-campaign results/smol/campaign --no-filters "
                               "--out results/smol/campaign_meta_eval_no_filters && python benchmarks/doc_tables.py")
CAMPAIGN_BLOCKS: list[Block] = [
    Block("docs/smol_meta_eval.md", f"campaign-{name}", CAMPAIGN_SNAPSHOT, render, CAMPAIGN_COMMAND)
    for name, render in (("status", campaign.status_block), ("results", campaign.results_block),
                         ("filters", campaign.filters_block),
                         ("spearman", campaign.spearman_block), ("variants", campaign.variants_block),
                         ("variant-means", campaign.variant_means_block), ("knowledge", campaign.knowledge_block),
                         ("plots", campaign.plots_block), ("anchors", campaign.anchors_block))] + [
    Block("docs/smol_meta_eval.md", "campaign-filters-effect", CAMPAIGN_NO_FILTERS, campaign.filters_effect_block,
          CAMPAIGN_NO_FILTERS_COMMAND),
    Block("docs/results.md", "campaign-results", CAMPAIGN_SNAPSHOT, campaign.readme_block,
          f"{CAMPAIGN_ASSEMBLE} && {CAMPAIGN_NO_FILTERS_COMMAND}"),
    # the protocol the campaign's files are measured under, rendered from the recipes protocol.json fixes
    Block("docs/smol_meta_eval.md", "campaign-protocol", "results/smol/campaign/protocol.json",
          campaign_protocol.protocol_block)]

# what an attacker recovers: the attack campaign's protocol, and its result once units are assembled (a
# block whose snapshot does not exist yet says so)
ATTACK_SNAPSHOT = "results/smol/attack_result/result.json"
ATTACK_COMMAND = attacks.ASSEMBLE + " && python benchmarks/doc_tables.py"
ATTACK_BLOCKS: list[Block] = [
    Block("docs/smol_attacks.md", f"attack-{name}", ATTACK_SNAPSHOT, render, ATTACK_COMMAND)
    for name, render in (("status", attacks.status_block), ("labels", attacks.labels_block),
                         ("rho", attacks.rho_block), ("auc", attacks.auc_block),
                         ("recovered", attacks.recovered_block), ("spread", attacks.spread_block),
                         ("findings", attacks.findings_block))] + [
    Block("docs/smol_attacks.md", "attack-protocol", "results/smol/attack_campaign/protocol.json",
          attacks.protocol_block)]

# curves during unlearning: the smol curves and their cost (benchmarks/bench_curve.py), and the
# check on Open-Unlearning's own trainer (experiments/ou_train_curve.sh)
CURVE_COMMAND = ("python benchmarks/bench_curve.py --preset smol --every 3 --models ... --out results/smol/curves "
                 "&& python benchmarks/doc_tables.py")
CURVE_BLOCKS: list[Block] = [
    Block("docs/curves.md", "curves-chosen", "results/smol/curves", curves.chosen_table, CURVE_COMMAND),
    Block("docs/curves.md", "curves-moves", "results/smol/curves", curves.moves_table, CURVE_COMMAND),
    Block("docs/curves.md", "curves-overhead", "results/smol/curves/overhead.json", curves.overhead_table,
          CURVE_COMMAND),
    Block("docs/curves.md", "curves-ou", "results/curves/ou_train_curve.json", curves.ou_check_table,
          "VENV=... bash experiments/ou_train_curve.sh && python benchmarks/doc_tables.py"),
]

# the users' model at its scale: experiments/llama1b.py's files
LLAMA1B_COMMAND = "bash experiments/llama1b_all.sh && python benchmarks/doc_tables.py"
LLAMA1B_BLOCKS: list[Block] = [
    Block("docs/llama1b.md", "llama1b-alignment", "results/llama1b", llama1b.alignment_table,
          "python experiments/llama1b.py alignment && python benchmarks/doc_tables.py"),
    *(Block("docs/llama1b.md", f"llama1b-{name}", "results/llama1b", render, LLAMA1B_COMMAND)
      for name, render in (("score", llama1b.score_table), ("parity", llama1b.parity_table),
                           ("bf16", llama1b.bf16_table), ("metrics", llama1b.metrics_table),
                           ("commands", llama1b.commands_table), ("scale", llama1b.scale_table),
                           ("profile", llama1b.profile_table))),
    Block("docs/llama1b.md", "llama1b-kernel-cache", "results/llama1b", llama1b.kernel_cache_table,
          "OMP_NUM_THREADS=1 python benchmarks/bench_kernel_cache.py --json results/llama1b/kernel_cache.json "
          "&& python benchmarks/doc_tables.py"),
    Block("docs/llama1b.md", "llama1b-ou-eval", "results/llama1b", llama1b.ou_eval_table,
          "VENV=... bash experiments/llama1b_ou.sh && python benchmarks/doc_tables.py"),
    Block("docs/llama1b.md", "llama1b-work", "results/llama1b", llama1b.work_table,
          "python experiments/llama1b.py work && python benchmarks/doc_tables.py")]

# the qwen world: one snapshot of its campaign folder, taken by experiments/qwen_snapshot.py
QWEN_SNAPSHOT = "results/qwen/snapshot.json"
QWEN_COMMAND = "python experiments/qwen_snapshot.py && python benchmarks/doc_tables.py"
QWEN_BLOCKS: list[Block] = [
    Block("docs/qwen.md", f"qwen-{name}", QWEN_SNAPSHOT, render, QWEN_COMMAND)
    for name, render in (("status", qwen.status_block), ("build", qwen.build_block),
                         ("knowledge", qwen.knowledge_block),
                         ("uds", qwen.uds_block), ("order", qwen.order_block), ("layers", qwen.layers_block),
                         ("first-ke", qwen.first_ke_block), ("exactness", qwen.exactness_block),
                         ("metrics", qwen.metrics_block), ("cost", qwen.cost_block))]

BLOCKS: list[Block] = [
    Block("docs/probe.md", "probe-ladder-test", "results/probe/ladder_test.json", probe.ladder_table),
    Block("docs/probe.md", "probe-ladder-small", "results/probe/ladder_small.json", probe.ladder_table),
    Block("docs/probe.md", "probe-repetition-small", "results/probe/repetition_small", probe.repetition_table),
    Block("docs/probe.md", "probe-repetition-smol", "results/probe/repetition_smol", probe.repetition_table),
    Block("docs/probe.md", "probe-repetition-kinds-smol", "results/probe/repetition_smol", probe.repetition_kind_table),
    *PASSAGE_BLOCKS,
    Block("docs/audit.md", "published-claims", "results/audit/published_claims.json", audit.published_claims,
          command="python experiments/audit_published_claims.py"),
    Block("docs/audit.md", "published-chance", "results/audit/published_claims.json", audit.published_chance_table,
          command="python experiments/audit_published_claims.py && python benchmarks/doc_tables.py"),
    Block("docs/audit.md", "audit-leaky-test", "results/audit/leaky_test", audit.leaky_table,
          command="python experiments/audit_leaky.py && python benchmarks/doc_tables.py"),
    Block("docs/audit.md", "audit-leaky-styles-test", "results/audit/leaky_test", audit.leaky_style_table,
          command="python experiments/audit_leaky.py && python benchmarks/doc_tables.py"),
    *(Block("docs/audit.md", name, "results/audit/leaky_small", render,
            command="python experiments/audit_leaky.py --runs RUNS --preset small --out results/audit/leaky_small "
                    "&& python benchmarks/doc_tables.py")
      for name, render in (("audit-world-small", audit.leaky_table),
                           ("audit-world-styles-small", audit.full_style_table),
                           ("audit-leaky-styles-small", audit.leaky_style_table))),
    Block("docs/audit.md", "audit-published-small", "results/audit/published_small", audit.published_runs_table,
          command="python experiments/audit_published_runs.py --runs RUNS && python benchmarks/doc_tables.py"),
    Block("docs/audit.md", "audit-uds-link", "results/audit_uds_link/summary.json", audit.uds_link_table),
    Block("docs/mem_bits.md", "mem-bits-sanity-test", "results/mem_bits/sanity_test.json", mem_bits.sanity_table),
    Block("docs/mem_bits.md", "mem-bits-signed-test", "results/mem_bits/signed_test", mem_bits.signed_table),
    Block("docs/mem_bits.md", "mem-bits-sanity-small", "results/mem_bits/sanity_small.json", mem_bits.sanity_table),
    Block("docs/mem_bits.md", "mem-bits-sanity-smol", "results/mem_bits/sanity_smol.json", mem_bits.sanity_table),
    Block("docs/mem_bits.md", "mem-bits-signed-smol", "results/mem_bits/signed_smol", mem_bits.signed_table),
    Block("docs/mem_bits.md", "mem-bits-meta-eval-test", "results/mem_bits/meta_eval_test.json",
          mem_bits.meta_eval_table),
    Block("docs/mem_bits.md", "mem-bits-meta-eval-test-no-filters", "results/mem_bits/meta_eval_test_no_filters.json",
          mem_bits.meta_eval_table),
    Block("docs/mem_bits.md", "mem-bits-kernels-small", "results/mem_bits/kernels_small", mem_bits.kernels_table,
          "python experiments/mem_bits_kernels.py --kernels K && python benchmarks/doc_tables.py"),
    Block("docs/mem_bits.md", "capacity-quick", "results/mem_bits/capacity_quick_runs.csv", capacity.quick_table),
    Block("docs/mem_bits.md", "capacity-default", "results/mem_bits/capacity_default_runs.csv", capacity.default_table),
    Block("docs/mem_bits.md", "capacity-plateau-small-alpha", "results/mem_bits/capacity_plateau_small_summary.json",
          capacity.alpha_steps_table),
    Block("docs/mem_bits.md", "capacity-plateau-small-runs", "results/mem_bits/capacity_plateau_small_runs.csv",
          capacity.plateau_runs_table),
    Block("docs/mem_bits.md", "capacity-cooldown-small-alpha", "results/mem_bits/capacity_cooldown_small_summary.json",
          capacity.alpha_steps_table),
    Block("docs/mem_bits.md", "capacity-cooldown-small-runs", "results/mem_bits/capacity_cooldown_small_runs.csv",
          capacity.plateau_runs_table),
    Block("docs/mem_bits.md", "capacity-cooldown-all-alpha", "results/mem_bits/capacity_cooldown_all_summary.json",
          capacity.alpha_steps_table),
    Block("docs/mem_bits.md", "capacity-cooldown-all-runs", "results/mem_bits/capacity_cooldown_all_runs.csv",
          capacity.plateau_runs_table),
    Block("docs/smol.md", "smol-build", "results/smol/build.json", smol.build_table),
    Block("docs/smol.md", "smol-uds", "results/smol/score", smol.uds_table),
    Block("docs/smol.md", "smol-layers", "results/smol/score", smol.layers_table),
    Block("docs/smol.md", "smol-results", "results/smol", smol.results_table),
    Block("docs/smol.md", "smol-meta-eval", "results/smol/meta_eval/meta_eval.json", smol.meta_eval_table),
    Block("docs/smol.md", "smol-meta-eval-no-filters", "results/smol/meta_eval/meta_eval_no_filters.json",
          smol.meta_eval_table),
    Block("docs/smol.md", "smol-spread", "results/smol/rebuild", smol.spread_table),
    Block("docs/smol.md", "smol-bench", "results/smol/bench_uds.json", smol.bench_table),
    Block("docs/smol.md", "smol-ou-eval", "results/smol/bench_ou_eval.json", smol.ou_eval_table,
          command="python benchmarks/bench_ou_eval.py --src-home UDS_HOME --out results/smol/bench_ou_eval.json "
                  "&& python benchmarks/doc_tables.py"),
    Block("docs/spans.md", "spans-splits", "results/spans/splits.json", spans.splits_table,
          command="python experiments/span_validation.py splits && python benchmarks/doc_tables.py"),
    Block("docs/spans.md", "spans-agreement", "results/spans/agreement.json", spans.agreement_table,
          command="python experiments/span_validation.py agreement && python benchmarks/doc_tables.py"),
    Block("docs/spans.md", "spans-relations", "results/spans/agreement.json", spans.relation_table),
    Block("docs/spans.md", "spans-uds-summary", "results/spans", spans.uds_summary_table,
          command="python experiments/span_validation.py uds --world WORLD && python benchmarks/doc_tables.py"),
    *(Block("docs/spans.md", f"spans-uds-{world}", f"results/spans/uds_{world}.json", spans.uds_table,
            command=f"UDS_HOME=... python experiments/span_validation.py uds --world {world} "
                    "&& python benchmarks/doc_tables.py")
      for world in ("test", "small", "smol")),
    Block("docs/reliability.md", "verify-cost", "results/smol/verify_cost.json", reliability.verify_cost_table,
          command="python benchmarks/bench_verify.py --out results/smol/verify_cost.json "
                  "&& python benchmarks/doc_tables.py"),
    Block("docs/performance.md", "measure-summary-ci", "results/smol/bench_measure_ci.json", measure.summary_table),
    Block("docs/performance.md", "measure-phases-ci", "results/smol/bench_measure_ci.json", measure.phase_table),
    Block("docs/performance.md", "measure-summary", "results/smol/bench_measure.json", measure.summary_table),
    Block("docs/performance.md", "measure-phases", "results/smol/bench_measure.json", measure.phase_table),
    Block("docs/performance.md", "measure-threads", "results/smol/bench_threads.json", measure.threads_table,
          "python benchmarks/bench_threads.py --preset smol-ci --units orig:npo_lr3e-5_b01_a1_ep2,"
          "nf4:npo_lr3e-5_b01_a1_ep2 --json results/smol/bench_threads.json && python benchmarks/doc_tables.py"),
    Block("docs/performance.md", "measure-fisher-batch1", "results/smol", measure.fisher_batch1_table,
          "python benchmarks/bench_fisher_batch1.py --preset PRESET --model NAME --json "
          "results/smol/bench_fisher_batch1*.json && python benchmarks/doc_tables.py"),
    Block("README.md", "main-readme", "results/reproduce/main_command.json", reproduce.main_command_block,
          inputs=("results/reproduce", "results/mem_bits/kernels_small", "results/meta_eval_small/results.json")),
    Block("README.md", "smol-readme", "results/smol", smol.readme_results),
    Block("docs/results.md", "measure-results", "results/smol", measure.readme_table,
          "python benchmarks/bench_measure.py --out results/smol/bench_measure*.json "
          "&& python benchmarks/doc_tables.py"),
    Block("docs/results.md", "probe-ladder-small-results", "results/probe/ladder_small.json", probe.ladder_table),
    # not a result: the registry itself, so the page lists every registered metric
    Block("docs/design.md", "metric-keys", "metrics/registry.py", metric_keys.metric_keys_block),
    *CAMPAIGN_BLOCKS,
    *ATTACK_BLOCKS,
    *CURVE_BLOCKS,
    *LLAMA1B_BLOCKS,
    *QWEN_BLOCKS,
]
