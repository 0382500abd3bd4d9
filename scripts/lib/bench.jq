# Summaries of the bench measurements: median and spread of each figure.
def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
  else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def spread: map(select(. != null)) | {median: median, min: min, max: max, n: length};
# ratio(a; b): a / b, or null when either is missing (a run that failed).
def ratio($a; $b): if $a == null or $b == null or $b == 0 then null else $a / $b end;
def r3: if . == null then null else (. * 1000 | round) / 1000 end;
def by_variant($field): group_by(.variant) | map({key: .[0].variant, value: (map(.[$field]) | spread)}) | from_entries;

. as $all
| {
    measurements: $all,
    orchestration: (
      [$all[] | select(.figure == "orchestration")] as $o
      | [$all[] | select(.figure == "orchestration-run")] as $runs
      | {
          overhead_s: ($o | by_variant("overhead_s")),
          period_overhead_s: ($o | by_variant("period_overhead_s")),
          run_overhead_per_cell_s: ($runs | by_variant("overhead_per_cell_s")),
          phases_s: (["prep_s", "setup_s", "train_s", "target_start_s", "join_s", "warmup_s", "k6_prep_s", "k6_process_s", "k6_startstop_s",
                      "teardown_s", "files_s", "row_s", "tables_s", "report_s", "finish_s", "between_s"]
            | map(. as $phase | {key: $phase, value: ($o | by_variant($phase))}) | from_entries),
          start_s: (["jvm_to_spring_s", "spring_s", "ready_after_log_s", "checks_s", "target_start_cpu_s"]
            | map(. as $part | {key: $part, value: ($o | by_variant($part))}) | from_entries),
          wall_over_k6: ($o | group_by(.variant) | map({key: .[0].variant,
            value: ((map(.wall_s) | add) / (map(.k6_s) | add) | r3)}) | from_entries),
          # The floor: the same target started bare in the same bench run
          # (bench_bare_start), and a cell's time outside k6 over it, medians.
          bare_start_s: ([$all[] | select(.figure == "bare-start")] | by_variant("start_s")),
          bare_start_cpu_s: ([$all[] | select(.figure == "bare-start")] | by_variant("cpu_s")),
          bare_jvm_to_spring_s: ([$all[] | select(.figure == "bare-start")] | by_variant("jvm_to_spring_s")),
          bare_spring_s: ([$all[] | select(.figure == "bare-start")] | by_variant("spring_s")),
          over_bare_start: (([$all[] | select(.figure == "bare-start")] | by_variant("start_s")) as $bare
            | $o | by_variant("period_overhead_s") | with_entries(.value = (ratio(.value.median; $bare[.key].median // null) | r3)))
        }),
    # The whole run as a user waits for it (bench_wholerun): per size, the
    # medians of its parts, and its time outside k6 over the floor, its cells
    # times the bare start's median of the same bench run.
    wholerun: (
      ([$all[] | select(.figure == "wholerun-bare-start") | .start_s] | spread) as $bare
      | [$all[] | select(.figure == "wholerun")] as $w
      | {
          bare_start_s: $bare,
          sizes: ($w | group_by(.cells) | map(. as $runs | {
            cells: .[0].cells,
            runs: (map(.run)),
            load_avg: ([.[] | .load_avg_start, .load_avg_end] | spread),
            wall_s: (map(.wall_s) | spread),
            k6_s: (map(.k6_s) | spread),
            lock_wait_s: (map(.lock_wait_s) | spread),
            outside_k6_s: (map(.outside_k6_s) | spread),
            make_s: (map(.make_s) | spread),
            before_first_cell_s: (map(.before_first_cell_s) | spread),
            per_cell_s: ([.[].cells_s[]] | spread),
            cells_s: (map(.cells_s | add) | spread),
            after_last_cell_s: (map(.after_last_cell_s) | spread),
            last_finish_s: (map(.last_finish_s) | spread),
            python_make: (map(.python_make) | spread),
            python_before: (map(.python_before) | spread),
            python_cells: (map(.python_cells) | spread),
            python_live: (map(.python_live) | spread),
            python_after: (map(.python_after) | spread),
            python_before_what: (.[0].python_before_what // []),
            python_after_what: (.[0].python_after_what // []),
            over_floor: (ratio((map(.outside_k6_s) | spread).median; if $bare.median == null then null else $bare.median * $runs[0].cells end) | r3)
          }))
        }),
    perturbation: (
      ["seeds", "saturated"] | map(. as $regime
        | [$all[] | select(.figure == "perturbation-" + $regime)] as $p
        | {key: $regime, value: {
            tps_ratio: ([$p | group_by(.rep)[] | ratio(map(select(.variant == "defaults"))[0].tps; map(select(.variant == "none"))[0].tps)] | spread),
            p95_ratio: ([$p | group_by(.rep)[] | ratio(map(select(.variant == "defaults"))[0].p95_ms; map(select(.variant == "none"))[0].p95_ms)] | spread),
            tps: ($p | by_variant("tps")),
            k6_cpu_avg_pct: ($p | by_variant("k6_cpu_avg_pct"))
          }}) | from_entries),
    capacity: [$all[] | select(.figure == "capacity") | del(.figure)],
    start: [$all[] | select(.figure == "start") | del(.figure)],
    connections_peak: ([$all[] | .server_conns_peak // empty] | max),
    sampler: (
      [$all[] | select(.figure == "sampler")] as $s
      | {
          tps_ratio: ([$s | group_by(.rep)[] | ratio(map(select(.variant == "on"))[0].tps; map(select(.variant == "off"))[0].tps)] | spread),
          p95_ratio: ([$s | group_by(.rep)[] | ratio(map(select(.variant == "on"))[0].p95_ms; map(select(.variant == "off"))[0].p95_ms)] | spread),
          tps: ($s | by_variant("tps")),
          p95_ms: ($s | by_variant("p95_ms")),
          wall_s: ($s | by_variant("wall_s")),
          cpu_pct: ([$s[] | select(.variant == "on") | .sampler_cpu_pct] | spread),
          cpu_ms_per_sample: ([$s[] | select(.variant == "on") | .sampler_cpu_ms_per_sample] | spread),
          missed_ticks: ([$s[] | select(.variant == "on") | .missed_ticks] | spread)
        }),
    ownscript: (
      [$all[] | select(.figure == "ownscript")] as $o
      | {
          tps_ratio: ([$o | group_by(.rep)[] | ratio(map(select(.variant == "own"))[0].tps; map(select(.variant == "spike"))[0].tps)] | spread),
          cpu_ratio: ([$o | group_by(.rep)[] | ratio(map(select(.variant == "own"))[0].k6_cpu_avg_pct; map(select(.variant == "spike"))[0].k6_cpu_avg_pct)] | spread),
          tps: ($o | by_variant("tps")),
          p95_ms: ($o | by_variant("p95_ms")),
          k6_cpu_avg_pct: ($o | by_variant("k6_cpu_avg_pct"))
        }),
    reference: ([$all[] | select(.figure == "reference")] | {ratio_k6_over_wrk: (map(.ratio) | spread),
      wrk_rps: (map(.wrk_rps) | spread), k6_rps: (map(.k6_rps) | spread)})
  }
