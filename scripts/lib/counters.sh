# shellcheck shell=bash
# Summary: kernel counter snapshots (nstat) and their deltas.

# counters_snapshot SIDE FILE: absolute values of every counter, zeros
# included, of one namespace. -s leaves nstat's history file alone.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
counters_snapshot() {
  local side="$1" file="$2"
  if ! netns_exec "$side" nstat -asz >"$file.tmp" || [[ ! -s "$file.tmp" ]]; then
    rm -f "$file.tmp"
    CELL_ERROR="cannot read the $side namespace's counters (nstat)"
    return 1
  fi
  mv "$file.tmp" "$file"
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
