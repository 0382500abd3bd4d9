# results.md: the rows as a readable Markdown table (a subset of the columns
# that fits a screen; results.csv has them all).
def cell: if . == null then "" else tostring end;
(["cell", "status", "as_designed"] + $axes + [
  "vus_max", "vus_started", "first_request_spread_ms", "http_reqs", "tps", "lat_med_ms", "lat_p95_ms", "lat_p99_ms", "lat_max_ms",
  "failed_reqs", "fail_connect", "fail_reset", "fail_timeout",
  "listen_overflows", "listen_drops", "syn_retrans",
  "server_conns_peak", "predicted_server_conns_peak", "queue_capacity", "accept_queue_peak", "listen_backlog",
  "predicted_listen_overflows", "prediction_check", "time_wait_peak"
] + $extra + ["error", "design_notes", "prediction_notes"]) as $head
| ("| " + ($head | join(" | ")) + " |"),
  ("|" + ($head | map("---") | join("|")) + "|"),
  (.[] | . as $r
   | "| " + ([$head[] | ($r[.] // ($r.extra // {})[.] // $r.axes[.]) | cell | gsub("\\|"; "\\|")] | join(" | ")) + " |")
