# One cell of the bench's orchestration runs: where its time went, phase by
# phase, from its phases.tsv (the input, raw lines "name<TAB>epoch_ms"), up
# to the next cell's start ($next_start, "" for a run's last cell).
# Args: $rep, $asked and $got (the start mode asked for and the one the
# target got, target-start.txt), $row (row.json, slurped), $started_line
# (Spring Boot's "Started ... in S seconds (process running for P)", or ""),
# $cpu_s (the target's CPU-seconds up to healthy, target-start.txt, or "").
# Consecutive marks cover the cell without a gap, so the phases add up to
# the cell's period. A cell whose finish (deltas, row, tables, report line,
# counts: the marks files, row, tables, finished) ran beside the next cell's
# start, which joined it (the next cell's mark joined, after this one's
# reported), ends its serial part at `stopped`: its finish is shown apart
# (finish_overlapped, finish_s), never added to the period, and the wait for
# it is the next cell's join_s.
[inputs | split("\t") | select(length == 2) | {name: .[0], ms: (.[1] | tonumber)}] as $marks
| def first_mark($n): [$marks[] | select(.name == $n) | .ms] | first;
  def last_mark($n): [$marks[] | select(.name == $n) | .ms] | last;
  def span($a; $b): if $a == null or $b == null then null else (($b - $a) / 1000 * 1000 | round / 1000) end;
  def r3: if . == null then null else (. * 1000 | round / 1000) end;
  ($row[0] // {}) as $r
| ($next_start | if . == "" then null else tonumber end) as $next
| ($next != null and (last_mark("reported") // 0) > $next) as $overlapped
| span(first_mark("train_start"); last_mark("train_end")) as $train
# The warm-up (WARMUP, warmup_start..warmup_end): its own phase, never the
# cell's overhead (null, and 0 in the sums, for a cell without one).
| span(last_mark("warmup_start"); last_mark("warmup_end")) as $warmup
| ($started_line | capture("in (?<s>[0-9.]+) seconds \\(process running for (?<p>[0-9.]+)\\)")? // null) as $started
| {
    rep: $rep, variant: $got, asked: $asked,
    wall_s: $r.cell_wall_s, k6_s: $r.duration_s,
    overhead_s: (if $r.cell_wall_s == null or $r.duration_s == null then null
      else ($r.cell_wall_s - $r.duration_s - ($warmup // 0) | r3) end),
    warmup_s: $warmup,
    prep_s: span(first_mark("cell_start"); first_mark("target_start")),
    setup_s: (span(first_mark("target_start"); last_mark("target_start")) as $s
      | if $s == null then null else ($s - ($train // 0) | r3) end),
    train_s: $train,
    target_start_s: span(last_mark("target_start"); last_mark("target_ready")),
    join_s: span(last_mark("target_ready"); last_mark("joined")),
    k6_prep_s: (span(last_mark("joined") // last_mark("target_ready"); last_mark("k6_start")) as $k
      | if $k == null then null else ($k - ($warmup // 0) | r3) end),
    k6_process_s: span(last_mark("k6_start"); last_mark("k6_end")),
    k6_startstop_s: (span(last_mark("k6_start"); last_mark("k6_end")) as $k
      | if $k == null or $r.duration_s == null then null else ($k - $r.duration_s | r3) end),
    teardown_s: span(last_mark("k6_end"); last_mark("stopped")),
    finish_overlapped: $overlapped,
    files_s: span(last_mark("stopped"); last_mark("files")),
    row_s: span(last_mark("files"); last_mark("row")),
    # Serial: the tables and the report line up to reported; beside the next
    # cell: the tables, then the report line and counts up to finished.
    tables_s: (if $overlapped then span(last_mark("row"); last_mark("tables")) else null end),
    report_s: (if $overlapped then span(last_mark("tables"); last_mark("finished"))
      else span(last_mark("row"); last_mark("reported")) end),
    finish_s: (if $overlapped then span(last_mark("stopped"); last_mark("finished")) else null end),
    between_s: span(if $overlapped then last_mark("stopped") else last_mark("reported") end; $next),
    period_s: span(first_mark("cell_start"); $next),
    period_overhead_s: (span(first_mark("cell_start"); $next) as $p
      | if $p == null or $r.duration_s == null then null else ($p - $r.duration_s - ($warmup // 0) | r3) end),
    target_start_cpu_s: ($cpu_s | if . == "" then null else tonumber end),
    spring_s: ($started.s // null | if . == null then null else tonumber end),
    jvm_to_spring_s: (if $started == null then null else ($started.p | tonumber) - ($started.s | tonumber) | r3 end),
    ready_after_log_s: (span(last_mark("target_start"); last_mark("target_healthy") // last_mark("target_ready")) as $t
      | if $t == null or $started == null then null else ($t - ($started.p | tonumber) | r3) end),
    # After healthy, still in the target start phase: its CPU read, the
    # connector check, the server's counters (netns backend).
    checks_s: span(last_mark("target_healthy"); last_mark("target_ready"))
  }
