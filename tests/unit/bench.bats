#!/usr/bin/env bats
# The bench's summaries: medians and ratios of side-by-side measurements.

setup() {
  load '../test_helper'
}

summarise() {
  jq -s -f "$LT_ROOT/scripts/lib/bench.jq"
}

@test "overhead per cell is the median per start mode, with its spread" {
  run summarise <<'JSON'
{"figure":"orchestration","rep":1,"variant":"jar","wall_s":8,"k6_s":3,"overhead_s":5}
{"figure":"orchestration","rep":1,"variant":"cds","wall_s":5,"k6_s":3,"overhead_s":2}
{"figure":"orchestration","rep":2,"variant":"jar","wall_s":7,"k6_s":3,"overhead_s":4}
{"figure":"orchestration","rep":2,"variant":"cds","wall_s":6,"k6_s":3,"overhead_s":3}
{"figure":"orchestration","rep":3,"variant":"jar","wall_s":12,"k6_s":3,"overhead_s":9}
{"figure":"orchestration","rep":3,"variant":"cds","wall_s":5.5,"k6_s":3,"overhead_s":2.5}
JSON
  assert_success
  jq -e '.orchestration.overhead_s.jar == {median: 5, min: 4, max: 9, n: 3}' <<<"$output"
  jq -e '.orchestration.overhead_s.cds.median == 2.5' <<<"$output"
  # 27 s of wall time for 9 s of k6.
  jq -e '.orchestration.wall_over_k6.jar == 3' <<<"$output"
}

@test "a cell's time outside k6 is set against the target's bare start of the same bench run" {
  run summarise <<'JSON'
{"figure":"orchestration","rep":1,"variant":"aot","wall_s":4,"k6_s":2.2,"overhead_s":1.8,"period_overhead_s":1.6}
{"figure":"orchestration","rep":2,"variant":"aot","wall_s":4,"k6_s":2.2,"overhead_s":1.8,"period_overhead_s":1.5}
{"figure":"orchestration","rep":3,"variant":"aot","wall_s":4,"k6_s":2.2,"overhead_s":1.8,"period_overhead_s":2.4}
{"figure":"bare-start","rep":1,"variant":"aot","start_s":1.1,"cpu_s":1.6}
{"figure":"bare-start","rep":1,"variant":"aot","start_s":1.3,"cpu_s":1.7}
{"figure":"bare-start","rep":2,"variant":"aot","start_s":1.2,"cpu_s":1.8}
{"figure":"bare-start","rep":2,"variant":"aot","start_s":null,"cpu_s":null}
JSON
  assert_success
  # A start that never answered is left out, not counted as 0.
  jq -e '.orchestration.bare_start_s.aot == {median: 1.2, min: 1.1, max: 1.3, n: 3}' <<<"$output"
  # Medians: 1.6 s a cell over 1.2 s.
  jq -e '.orchestration.over_bare_start.aot == 1.333' <<<"$output"
  run jq -r -f "$LT_ROOT/scripts/lib/bench-md.jq" <<<"$output"
  assert_output --partial "| aot | 1.2 (1.1..1.3, n=3) | 1.7 (1.6..1.8, n=3) | 1.33 |"
}

@test "the whole run: its time outside k6 over its cells times the bare start, and where it went, per size" {
  run summarise <<'JSON'
{"figure":"wholerun-bare-start","rep":1,"variant":"auto","start_s":1.0}
{"figure":"wholerun-bare-start","rep":1,"variant":"auto","start_s":1.2}
{"figure":"wholerun","rep":1,"variant":"3 cell(s)","run":"r1","cells":3,"wall_s":14,"k6_s":9,"lock_wait_s":0,"outside_k6_s":5,"make_s":0.2,"before_first_cell_s":0.6,"cells_s":[1.3,1.2,1.4],"after_last_cell_s":0.8,"last_finish_s":0.3,"python_make":0,"python_before":3,"python_cells":6,"python_live":3,"python_after":2,"python_before_what":["ltsuite.cell"],"python_after_what":["ltsuite.cell","ltsuite.tables"],"load_avg_start":1,"load_avg_end":2}
{"figure":"wholerun","rep":2,"variant":"3 cell(s)","run":"r2","cells":3,"wall_s":15,"k6_s":9,"lock_wait_s":4,"outside_k6_s":6,"make_s":0.2,"before_first_cell_s":0.7,"cells_s":[1.5,1.6,1.7],"after_last_cell_s":0.9,"last_finish_s":0.3,"python_make":0,"python_before":3,"python_cells":6,"python_live":3,"python_after":2,"load_avg_start":1,"load_avg_end":3}
JSON
  assert_success
  jq -e '.wholerun.bare_start_s.median == 1.1' <<<"$output"
  # 5.5 s outside k6 (the median of 5 and 6) over 3 cells x 1.1 s.
  jq -e '.wholerun.sizes[0] | .cells == 3 and .outside_k6_s.median == 5.5 and .over_floor == 1.667
    and .per_cell_s.n == 6 and .runs == ["r1", "r2"]' <<<"$output"
  run jq -r -f "$LT_ROOT/scripts/lib/bench-md.jq" <<<"$output"
  assert_output --partial "| 3 | 14.5 (14..15, n=2) | 9 (9..9, n=2) | 5.5 (5..6, n=2) | 1.67 | 0.2 (0.2..0.2, n=2) | 0.65 (0.6..0.7, n=2) |"
  assert_output --partial "| 0 / 3 / 6 (+3) / 2 | 1..3 |"
}

@test "perturbation ratios pair the variants of the same repetition" {
  run summarise <<'JSON'
{"figure":"perturbation-saturated","rep":1,"variant":"none","tps":1000,"p95_ms":10}
{"figure":"perturbation-saturated","rep":1,"variant":"defaults","tps":900,"p95_ms":12}
{"figure":"perturbation-saturated","rep":2,"variant":"none","tps":2000,"p95_ms":10}
{"figure":"perturbation-saturated","rep":2,"variant":"defaults","tps":1900,"p95_ms":11}
JSON
  assert_success
  # 0.9 and 0.95: the median of an even count is the mean of the middle two.
  jq -e '.perturbation.saturated.tps_ratio.median == 0.925' <<<"$output"
  jq -e '.perturbation.saturated.p95_ratio.max == 1.2' <<<"$output"
}

@test "bench.md renders every section" {
  run bash -c "summarise() { jq -s -f '$LT_ROOT/scripts/lib/bench.jq'; }; printf '%s\n' \
    '{\"figure\":\"reference\",\"rep\":1,\"wrk_rps\":100,\"k6_rps\":50,\"ratio\":0.5}' \
    | summarise | jq -r -f '$LT_ROOT/scripts/lib/bench-md.jq'"
  assert_success
  assert_output --partial "## 1. Orchestration overhead"
  assert_output --partial "## 4. Reference"
  assert_output --partial "k6 / wrk requests per second: 0.5 (0.5..0.5, n=1)"
}

@test "the sampler's figures put on and off side by side, with its own CPU" {
  run summarise <<'JSON'
{"figure":"sampler","rep":1,"variant":"off","tps":1000,"p95_ms":1010,"wall_s":20,"sampler_cpu_pct":null,"sampler_cpu_ms_per_sample":null,"missed_ticks":null}
{"figure":"sampler","rep":1,"variant":"on","tps":980,"p95_ms":1020,"wall_s":21,"sampler_cpu_pct":1.5,"sampler_cpu_ms_per_sample":15,"missed_ticks":0}
{"figure":"sampler","rep":2,"variant":"off","tps":1000,"p95_ms":1010,"wall_s":20,"sampler_cpu_pct":null,"sampler_cpu_ms_per_sample":null,"missed_ticks":null}
{"figure":"sampler","rep":2,"variant":"on","tps":1000,"p95_ms":1010,"wall_s":20,"sampler_cpu_pct":2.5,"sampler_cpu_ms_per_sample":25,"missed_ticks":1}
JSON
  assert_success
  jq -e '.sampler.tps_ratio == {median: 0.99, min: 0.98, max: 1, n: 2}' <<<"$output"
  jq -e '.sampler.cpu_pct.median == 2 and .sampler.cpu_ms_per_sample.max == 25 and .sampler.missed_ticks.max == 1' <<<"$output"
  jq -e '.sampler.wall_s.on.median == 20.5 and .sampler.tps.off.n == 2' <<<"$output"
  run jq -r -f "$LT_ROOT/scripts/lib/bench-md.jq" <<<"$output"
  assert_output --partial "| TPS | 1000 (1000..1000, n=2) | 990 (980..1000, n=2) | 0.99 (0.98..1, n=2) |"
  assert_output --partial "the sampler's own CPU, probes included: 2 (1.5..2.5, n=2) % of one core"
}

@test "a script of one's own beside the spike scenario: TPS and k6's CPU as ratios" {
  run summarise <<'JSON'
{"figure":"ownscript","rep":1,"variant":"spike","tps":2000,"p95_ms":50,"k6_cpu_avg_pct":150}
{"figure":"ownscript","rep":1,"variant":"own","tps":1800,"p95_ms":55,"k6_cpu_avg_pct":165}
{"figure":"ownscript","rep":2,"variant":"spike","tps":2000,"p95_ms":50,"k6_cpu_avg_pct":150}
{"figure":"ownscript","rep":2,"variant":"own","tps":2000,"p95_ms":50,"k6_cpu_avg_pct":150}
JSON
  assert_success
  jq -e '.ownscript.tps_ratio == {median: 0.95, min: 0.9, max: 1, n: 2} and .ownscript.cpu_ratio.max == 1.1' <<<"$output"
  run jq -r -f "$LT_ROOT/scripts/lib/bench-md.jq" <<<"$output"
  assert_output --partial "| TPS | 2000 (2000..2000, n=2) | 1900 (1800..2000, n=2) | 0.95 (0.9..1, n=2) |"
}

@test "a repetition with a failed run gives no ratio instead of stopping the summary" {
  run summarise <<'JSON'
{"figure":"sampler","rep":1,"variant":"off","tps":1000,"p95_ms":10}
{"figure":"sampler","rep":2,"variant":"off","tps":1000,"p95_ms":10}
{"figure":"sampler","rep":2,"variant":"on","tps":900,"p95_ms":20}
JSON
  assert_success
  jq -e '.sampler.tps_ratio == {median: 0.9, min: 0.9, max: 0.9, n: 1} and .sampler.p95_ratio.median == 2' <<<"$output"
}

@test "the start section keeps every burst (users per VU auto and 1) and spike row, and the connections peak is the largest seen" {
  run summarise <<'JSON'
{"figure":"start","vus":1000,"scenario":"burst","users_per_vu":1,"k6_vus":1000,"k6_instances":1,"vus_started":1000,"first_request_after_s":5.2,"first_request_spread_ms":120,"vus_per_s":null,"k6_rss_peak_mb":300,"kb_per_vu":307,"server_conns_peak":1000,"as_designed":1}
{"figure":"start","vus":1000,"scenario":"spike","users_per_vu":1,"k6_vus":1000,"k6_instances":1,"vus_started":1000,"first_request_after_s":0.8,"first_request_spread_ms":700,"vus_per_s":1250,"k6_rss_peak_mb":290,"kb_per_vu":297,"server_conns_peak":998,"as_designed":1}
{"figure":"start","vus":20000,"scenario":"burst","users_per_vu":1,"k6_vus":20000,"k6_instances":2,"burst_lead_ms":27000,"vus_started":20000,"first_request_after_s":30,"first_request_spread_ms":2100,"vus_per_s":null,"k6_rss_peak_mb":5000,"kb_per_vu":256,"server_conns_peak":20000,"as_designed":0}
{"figure":"start","vus":20000,"scenario":"burst","users_per_vu":50,"k6_vus":400,"k6_instances":2,"burst_lead_ms":1000,"vus_started":20000,"first_request_after_s":3,"first_request_spread_ms":150,"vus_per_s":null,"connect_med_ms":412.46,"syn_retrans":0,"listen_overflows":0,"load_avg":3.2,"k6_rss_peak_mb":1500,"kb_per_vu":77,"server_conns_peak":20000,"as_designed":1}
{"figure":"orchestration","rep":1,"variant":"cds","wall_s":5,"k6_s":3,"overhead_s":2,"setup_s":0.3,"target_start_s":1.5,"k6_process_s":3.4,"teardown_s":0.4,"files_s":0.1}
JSON
  assert_success
  jq -e '.start | length == 4' <<<"$output"
  jq -e '.connections_peak == 20000' <<<"$output"
  jq -e '.orchestration.phases_s.target_start_s.cds.median == 1.5' <<<"$output"
  run jq -r -f "$LT_ROOT/scripts/lib/bench-md.jq" <<<"$output"
  # The lead the suite chose for a burst; a spike has none. The old way beside the new, each with
  # what its users waited for to connect and the load it ran under; a row without them says "-".
  assert_output --partial "| 20000 | burst | 1 | 20000 | 2 | 27000 | 20000 | 30 | - | 2100 | - | - | - | - | 5000 | 256 | 20000 | 0 |"
  assert_output --partial "| 20000 | burst | 50 | 400 | 2 | 1000 | 20000 | 3 | - | 150 | 412.46 | 0 | 0 | 3.2 | 1500 | 77 | 20000 | 1 |"
  assert_output --partial "| 1000 | spike | 1 | 1000 | 1 | - | 1000 | 0.8 | 1250 | 700 | - | - | - | - | 290 | 297 | 998 | 1 |"
  assert_output --partial "| cds | - | 0.3 (0.3..0.3, n=1) | 1.5 (1.5..1.5, n=1) | - | - | - | 3.4 (3.4..3.4, n=1) |"
  assert_output --partial "Most concurrent connections the target held in this bench: 20000"
}

@test "a cell's phases come from its phases.tsv, add up to its period, and keep a training start apart" {
  run jq -Rn -c --argjson rep 1 --arg asked auto --arg got aot --arg next_start 16000 --arg cpu_s 3.52 \
    --slurpfile row <(printf '{"cell_wall_s": 14.3, "duration_s": 2.0}') \
    --arg started_line 'Started App in 1.2 seconds (process running for 1.4)' \
    -f "$LT_ROOT/scripts/lib/bench-cell.jq" < <(printf '%s\t%s\n' cell_start 1000 target_start 1010 \
      train_start 1100 train_end 11100 target_start 11200 target_ready 12700 k6_start 12750 k6_end 15000 \
      stopped 15200 files 15300 row 15500 reported 15550)
  assert_success
  jq -e '.variant == "aot" and .asked == "auto" and .overhead_s == 12.3' <<<"$output"
  jq -e '[.prep_s, .setup_s, .train_s, .target_start_s, .k6_prep_s, .k6_process_s, .teardown_s,
          .files_s, .row_s, .report_s, .between_s] == [0.01, 0.19, 10, 1.5, 0.05, 2.25, 0.2, 0.1, 0.2, 0.05, 0.45]' <<<"$output"
  # Every millisecond of the period is in one phase.
  jq -e '([.prep_s, .setup_s, .train_s, .target_start_s, .k6_prep_s, .k6_process_s, .teardown_s,
           .files_s, .row_s, .report_s, .between_s] | add * 1000 | round) == (.period_s * 1000 | round)' <<<"$output"
  jq -e '.period_s == 15 and .period_overhead_s == 13 and .k6_startstop_s == 0.25' <<<"$output"
  jq -e '.spring_s == 1.2 and .jvm_to_spring_s == 0.2 and .ready_after_log_s == 0.1 and .target_start_cpu_s == 3.52' <<<"$output"
}

@test "a cell's warm-up is a phase of its own, never in its overhead: out of overhead_s, period_overhead_s and k6_prep_s" {
  # The same cell as above, with a 5 s warm-up between target_ready and k6_start.
  run jq -Rn -c --argjson rep 1 --arg asked aot --arg got aot --arg next_start 21000 --arg cpu_s "" \
    --slurpfile row <(printf '{"cell_wall_s": 19.3, "duration_s": 2.0}') --arg started_line "" \
    -f "$LT_ROOT/scripts/lib/bench-cell.jq" < <(printf '%s\t%s\n' cell_start 1000 target_start 1010 \
      train_start 1100 train_end 11100 target_start 11200 target_ready 12700 warmup_start 12720 warmup_end 17720 \
      k6_start 17750 k6_end 20000 stopped 20200 files 20300 row 20500 reported 20550)
  assert_success
  jq -e '.warmup_s == 5 and .overhead_s == 12.3 and .period_overhead_s == 13 and .k6_prep_s == 0.05' <<<"$output"
  # The phases, the warm-up among them, still add up to the period.
  jq -e '([.prep_s, .setup_s, .train_s, .target_start_s, .warmup_s, .k6_prep_s, .k6_process_s, .teardown_s,
           .files_s, .row_s, .report_s, .between_s] | add * 1000 | round) == (.period_s * 1000 | round)' <<<"$output"
  # Without a warm-up: no figure, not 0.
  run jq -Rn -c --argjson rep 1 --arg asked aot --arg got aot --arg next_start "" --arg cpu_s "" \
    --slurpfile row <(printf '{"cell_wall_s": 4, "duration_s": 2.0}') --arg started_line "" \
    -f "$LT_ROOT/scripts/lib/bench-cell.jq" < <(printf '%s\t%s\n' cell_start 1000 target_start 1010 target_ready 2700 k6_start 2750)
  jq -e '.warmup_s == null and .overhead_s == 2 and .k6_prep_s == 0.05' <<<"$output"
}

@test "a finish beside the next cell's start is shown apart, not added to the period; the next cell's wait for it is its join" {
  # The cell's finish (files .. finished) runs after the next cell started
  # (17000); its report line came at the next cell's join (18500).
  run jq -Rn -c --argjson rep 1 --arg asked aot --arg got aot --arg next_start 17000 --arg cpu_s "" \
    --slurpfile row <(printf '{"cell_wall_s": 6.9, "duration_s": 2.0}') --arg started_line "" \
    -f "$LT_ROOT/scripts/lib/bench-cell.jq" < <(printf '%s\t%s\n' cell_start 10000 target_start 10050 \
      target_start 10100 target_ready 12000 joined 12000 k6_start 12050 k6_end 16800 stopped 16950 \
      files 17100 row 17200 tables 17250 finished 17400 reported 18500)
  assert_success
  jq -e '.finish_overlapped and .finish_s == 0.45 and .files_s == 0.15 and .row_s == 0.1 and .tables_s == 0.05
         and .report_s == 0.15 and .between_s == 0.05 and .join_s == 0 and .k6_prep_s == 0.05' <<<"$output"
  # The serial phases (the finish not among them) add up to the period.
  jq -e '([.prep_s, .setup_s, .target_start_s, .join_s, .k6_prep_s, .k6_process_s, .teardown_s, .between_s]
          | add * 1000 | round) == (.period_s * 1000 | round) and .period_s == 7' <<<"$output"
  # The next cell: it waited 0.3 s at its join for a finish still running.
  run jq -Rn -c --argjson rep 1 --arg asked aot --arg got aot --arg next_start "" --arg cpu_s "" \
    --slurpfile row <(printf '{"cell_wall_s": 6.9, "duration_s": 2.0}') --arg started_line "" \
    -f "$LT_ROOT/scripts/lib/bench-cell.jq" < <(printf '%s\t%s\n' cell_start 17000 target_start 17100 \
      target_ready 18200 joined 18500 k6_start 18550)
  jq -e '.join_s == 0.3 and .k6_prep_s == 0.05 and .finish_overlapped == false' <<<"$output"
}

@test "a run's last cell has no period, and a target without Spring Boot's log line no start breakdown" {
  run jq -Rn -c --argjson rep 1 --arg asked jar --arg got jar --arg next_start "" --arg cpu_s "" \
    --slurpfile row <(printf '{"cell_wall_s": 5, "duration_s": 2}') --arg started_line "" \
    -f "$LT_ROOT/scripts/lib/bench-cell.jq" < <(printf '%s\t%s\n' cell_start 0 target_start 100 target_ready 2100)
  assert_success
  jq -e '.period_s == null and .between_s == null and .train_s == null and .spring_s == null and .setup_s == 0
          and .target_start_cpu_s == null' <<<"$output"
}

@test "the overhead per cell of a run, by start mode, and the start's parts, rendered" {
  run summarise <<'JSON'
{"figure":"orchestration-run","rep":1,"variant":"cds+aot","cells":8,"wall_s":60,"k6_s":24,"overhead_per_cell_s":4.5}
{"figure":"orchestration-run","rep":2,"variant":"cds+aot","cells":8,"wall_s":52,"k6_s":24,"overhead_per_cell_s":3.5}
{"figure":"orchestration","rep":1,"variant":"aot","wall_s":5,"k6_s":3,"overhead_s":2,"period_overhead_s":2.5,"setup_s":0.1,"target_start_s":1.4,"jvm_to_spring_s":0.3,"spring_s":1.0,"ready_after_log_s":0.1,"target_start_cpu_s":3.5}
JSON
  assert_success
  jq -e '.orchestration.run_overhead_per_cell_s["cds+aot"] == {median: 4, min: 3.5, max: 4.5, n: 2}' <<<"$output"
  run jq -r -f "$LT_ROOT/scripts/lib/bench-md.jq" <<<"$output"
  assert_output --partial "| aot | 2.5 (2.5..2.5, n=1) | 2 (2..2, n=1) | 1.67 |"
  assert_output --partial "Per cell of a whole run (start modes cds+aot, cells alternating; from its first cell's start to its end, the final tables and report included): 4 (3.5..4.5, n=2)"
  assert_output --partial "| aot | 0.3 (0.3..0.3, n=1) | 1 (1..1, n=1) | 0.1 (0.1..0.1, n=1) | - | 3.5 (3.5..3.5, n=1) | - | - |"
}

@test "the start's checks after healthy are a part of their own, beside the bare start's parts" {
  run jq -Rn -c --argjson rep 1 --arg asked aot --arg got aot --arg next_start 6000 --arg cpu_s 3 \
    --slurpfile row <(printf '{"cell_wall_s": 5, "duration_s": 2}') \
    --arg started_line 'Started App in 1.2 seconds (process running for 1.4)' \
    -f "$LT_ROOT/scripts/lib/bench-cell.jq" < <(printf '%s\t%s\n' cell_start 0 target_start 100 \
      target_healthy 1550 target_ready 1800 k6_start 1850 k6_end 4000)
  assert_success
  # Started at 1500 (100 + 1.4 s): healthy 50 ms later, then 250 ms of checks, all in the target start.
  jq -e '.target_start_s == 1.7 and .ready_after_log_s == 0.05 and .checks_s == 0.25' <<<"$output"
  local cell
  cell="$(jq -c '. + {figure: "orchestration"}' <<<"$output")"
  run summarise <<JSON
$cell
{"figure":"bare-start","rep":1,"variant":"aot","start_s":1.4,"cpu_s":2.5,"spring_s":1.1,"jvm_to_spring_s":0.25}
JSON
  run jq -r -f "$LT_ROOT/scripts/lib/bench-md.jq" <<<"$output"
  assert_output --partial "| aot | 0.2 (0.2..0.2, n=1) | 1.2 (1.2..1.2, n=1) | 0.05 (0.05..0.05, n=1) | 0.25 (0.25..0.25, n=1) | 3 (3..3, n=1) | 0.25 (0.25..0.25, n=1) | 1.1 (1.1..1.1, n=1) |"
}

@test "a bench that ends without the run lock leaves the suite's namespaces alone" {
  # They belong to whichever run holds the lock, mid-cell (a bench ending
  # at 05:36:13 removed them under a run's cell 03: its nstat failed).
  # shellcheck disable=SC2016 # SC2016: expanded by the bash that runs it
  local exit_with='source "$LT_ROOT/scripts/bench.sh"
    netns_down() { echo "namespaces removed"; }
    k6_stop() { :; }
    target_stop() { :; }'
  run bash -c "$exit_with; on_exit"
  assert_success
  refute_output --partial "namespaces removed"
  # bench_wrk's own namespaces, made under the lock: removed.
  run bash -c "$exit_with; exec {lock_fd}>/dev/null; on_exit"
  assert_output --partial "namespaces removed"
}

@test "the bench takes the run lock for its bare starts and lets it go after them" {
  local lock="$BATS_TEST_TMPDIR/run.lock"
  # shellcheck disable=SC2016 # SC2016: expanded by the bash that runs it
  run bash -c 'source "$LT_ROOT/scripts/bench.sh"
    LT_LOCK_FILE="$1"
    BENCH_DIR="$2"
    bench_bare_start() {
      if flock -n "$LT_LOCK_FILE" true; then echo "{\"held\": false}"; else echo "{\"held\": true}"; fi
    }
    bench_bare_starts 1
    flock -n "$LT_LOCK_FILE" true && echo "free after"' _ "$lock" "$BATS_TEST_TMPDIR"
  assert_success
  assert_output --partial "free after"
  # One bare start per start mode, each while the bench held the lock.
  run jq -s -c '[.[] | select(.figure == "bare-start") | .held]' "$BATS_TEST_TMPDIR/measurements.jsonl"
  assert_output '[true,true,true]'
}

@test "the bench refuses a run lock that another user could have planted" {
  ln -s "$BATS_TEST_TMPDIR/elsewhere" "$BATS_TEST_TMPDIR/run.lock"
  # shellcheck disable=SC2016 # SC2016: expanded by the bash that runs it
  run bash -c 'source "$LT_ROOT/scripts/bench.sh"; LT_LOCK_FILE="$1"; bench_lock' _ "$BATS_TEST_TMPDIR/run.lock"
  assert_failure
  assert_output --partial "run.lock is a symlink"
  [[ ! -e "$BATS_TEST_TMPDIR/elsewhere" ]]
}

@test "the delayer's burst table: a row per cell, its packets held from netdelay.json, flagged when the delayer fell behind" {
  source "$LT_ROOT/scripts/bench.sh"
  local run="$BATS_TEST_TMPDIR/20261129-000000-netdelay-bursts"
  mkdir -p "$run/cells/01" "$run/cells/02"
  printf '{"vus_max":500,"net_held_peak_per_s":12000,"net_hold_p99_ms":26.1,"net_unread_p99_ms":0.4,"net_unread_peak":80,"net_delayer_drops":0,"k6_release_cpu_pct":60.5,"machine_release_busy_pct":70,"t_connect_new_med_ms":51.2,"design_notes":null}\n' >"$run/cells/01/row.json"
  printf '{"held":5012}\n' >"$run/cells/01/netdelay.json"
  printf '{"vus_max":3000,"net_held_peak_per_s":31000,"net_hold_p99_ms":46.3,"net_unread_p99_ms":1.3,"net_unread_peak":545,"net_delayer_drops":0,"k6_release_cpu_pct":40.5,"machine_release_busy_pct":99.5,"t_connect_new_med_ms":243.8,"design_notes":"the delayer fell behind: its packets'"'"' 99th-percentile hold was 46.3 ms"}\n' >"$run/cells/02/row.json"
  run netdelay_burst_table "$run"
  assert_success
  assert_line --index 0 "## Bursts through the delayer at NET_RTT_MS=50 (run 20261129-000000-netdelay-bursts)"
  assert_line "| 500 | 12000 | 5012 | 26.1 | 0.4 | 80 | 0 | 60.5 | 70 | 51.2 | no |"
  assert_line "| 3000 | 31000 | - | 46.3 | 1.3 | 545 | 0 | 40.5 | 99.5 | 243.8 | yes |"
}
