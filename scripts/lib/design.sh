# shellcheck shell=bash
# Summary: design checks of a matrix's cells before the run (ltsuite.design's
# warnings and resolved knobs), with the facts of this machine they depend on.

# design_machine_json: {cpus, nofile, mem_available_mb} of this machine: k6
# raises its open-file limit to the hard limit, so that is what counts.
design_machine_json() {
  jq -n --argjson cpus "$(nproc)" --argjson nofile "$(design_nofile_limit)" \
    --argjson mem "$(awk '$1 == "MemAvailable:" { printf "%d", $2 / 1024 }' /proc/meminfo)" \
    '{cpus: $cpus, nofile: $nofile, mem_available_mb: $mem}'
}

# design_nofile_limit: the hard open-file limit (a large number for "unlimited").
design_nofile_limit() {
  local limit
  limit="$(ulimit -Hn)"
  [[ "$limit" == unlimited ]] && limit=1048576
  printf '%s\n' "$limit"
}

# design_plan CELLS_DIR TOTAL MACHINE_JSON RESOLVED_DIR: "INDEX<TAB>warning" a
# line for every cell, and RESOLVED_DIR/INDEX.env, its settings with the knobs
# left at auto resolved, in one process for the run (ltsuite.cell plan), from
# CELLS_DIR/INDEX.env and INDEX.json (k6 inspect of a script of one's own).
design_plan() {
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -S -m ltsuite.cell plan "$1" "$2" "$3" --resolved-dir "$4"
}
