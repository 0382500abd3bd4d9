# shellcheck shell=bash
# Summary: kernel counter snapshots (nstat) and their deltas.

# counters_snapshot SIDE FILE: absolute values of every counter, zeros
# included, of one namespace. -a with -s: nstat neither reads nor writes its
# history file (/tmp/.nstat.u0 or NSTAT_HISTORY), so snapshots taken at the
# same time do not share one. On failure CELL_ERROR ends with the last line
# nstat (or ip netns exec, e.g. a namespace removed under the cell) wrote.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
counters_snapshot() {
  local side="$1" file="$2" said status=0
  said="$({ netns_exec "$side" nstat -asz >"$file.tmp"; } 2>&1)" || status=$?
  if ((status != 0)) || [[ ! -s "$file.tmp" ]]; then
    rm -f "$file.tmp"
    said="$(counters_last_line "$said")"
    ((status != 0)) || said="${said:-it printed nothing}"
    cell_error "cannot read the $side namespace's counters (nstat)${said:+: $said}"
    return 1
  fi
  # What it said on success (none is known) still reaches the run's log.
  [[ -z "$said" ]] || printf '%s\n' "$said" >&2
  mv "$file.tmp" "$file"
}

# counters_last_line TEXT: the last non-blank line of TEXT, spaces trimmed,
# cut to 200 characters (a reason fits a row's error column).
counters_last_line() {
  awk 'NF { line = $0 } END { gsub(/^[ \t]+|[ \t]+$/, "", line); print substr(line, 1, 200) }' <<<"$1"
}

# counters_delta SIDE BEFORE AFTER: print "counter<TAB>side<TAB>delta" for every
# counter whose value changed. A counter missing from BEFORE counts from 0.
# TcpCurrEstab is a gauge, not a counter (it goes down), so it is left out.
# Exact 64-bit values (ltsuite.counters): octet counters pass 2^31.
counters_delta() {
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -S -m ltsuite.counters delta "$1" "$2" "$3"
}

# counters_value DELTA_FILE SIDE COUNTER: the delta of one counter (0 if it
# did not change), as written (every digit, no number conversion).
counters_value() {
  local file="$1" side="$2" counter="$3"
  awk -F'\t' -v side="$side" -v counter="$counter" '
    $1 == counter && $2 == side { value = $3 }
    END { print (value == "" ? 0 : value) }
  ' "$file"
}
