# shellcheck shell=bash
# Summary: the disk a run needs: checked before it starts, watched after
# each cell, and what a full disk leaves (nothing half-written).
#
# Before the run: the cells still to run are estimated (ltsuite/space.py: k6's
# samples dominate) and a run that would not fit is refused, with one line
# naming the directory and what to free. During the run: a small reserve file
# in the run's directory is given back when the disk fills, so the manifest
# can still say interrupted; after each cell a disk that is full stops the
# run, the cell cut off is dropped (RESUME runs it again once there is room)
# and no temporary file is left.
#
# Needs common.sh and matrix.sh; the runner sets LT_RUN_DIR and LT_RUN_ID.

# Bytes kept in reserve in the run's directory (space_reserve), and the free
# bytes under which the disk counts as full (space_full).
SPACE_RESERVE_BYTES="${SPACE_RESERVE_BYTES:-65536}"
SPACE_FULL_BYTES="${SPACE_FULL_BYTES:-65536}"

# space_free DIR: the bytes free for this user on DIR's file system.
space_free() {
  df -B1 --output=avail "$1" 2>/dev/null | tail -n 1 | tr -d ' '
}

# space_mount DIR: the mount point of DIR's file system.
space_mount() {
  df --output=target "$1" 2>/dev/null | tail -n 1
}

# space_human BYTES: "812 KB", "3.2 MB" (powers of 1024).
space_human() {
  awk -v b="$1" 'BEGIN {
    if (b < 1048576) printf "%.0f KB", b / 1024
    else if (b < 1073741824) printf "%.1f MB", b / 1048576
    else printf "%.1f GB", b / 1073741824
  }'
}

# space_estimate PLAN_LINE...: the bytes the cells of the plan lines
# ("INDEX K NAME", run_plan) will write (ltsuite/space.py), with a run's
# reserve and manifest and report.
space_estimate() {
  local dir line index
  local -A count=()
  dir="$(mktemp -d)"
  for line in "$@"; do
    index="${line%% *}"
    count[$index]=$((${count[$index]:-0} + 1))
  done
  local -a args=()
  for index in "${!count[@]}"; do
    matrix_cell_values "$index" >"$dir/$index.env"
    args+=("$dir/$index.env:${count[$index]}")
  done
  local bytes=0
  if [[ ${#args[@]} -gt 0 ]]; then
    bytes="$(PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -m ltsuite.space "${args[@]}")" || bytes=0
  fi
  rm -rf "$dir"
  space_with_run "$bytes"
}

# space_with_run BYTES: the cells' BYTES (ltsuite/space.py) with a run's
# reserve and manifest and report.
space_with_run() {
  printf '%s\n' "$((${1:-0} + SPACE_RESERVE_BYTES + 262144))"
}

# space_check DIR PLAN_LINE...: refuse (exit 1) a run whose cells to run
# (PLAN_LINEs) would not fit in DIR's free space, naming DIR and how much to
# free there.
space_check() {
  local dir="$1"
  shift
  space_check_need "$dir" "$(space_estimate "$@")" "$#"
}

# space_check_need DIR NEED CELLS: refuse (exit 1) a run of CELLS cells that
# needs NEED bytes (space_estimate) when DIR's free space is less.
space_check_need() {
  local dir="$1" need="$2" cells="$3" free
  free="$(space_free "$dir")"
  [[ "$free" =~ ^[0-9]+$ ]] || return 0
  ((free < need)) || return 0
  abort "not enough disk for this run: its $cells cell(s) write about $(space_human "$need") to $dir, which has $(space_human "$free") free on $(space_mount "$dir"); free at least $(space_human $((need - free))) there, or set LT_RESULTS_DIR to a disk with room"
}

# space_reserve RUN_DIR: keep SPACE_RESERVE_BYTES in RUN_DIR/.space-reserve,
# to give back when the disk fills (space_release).
space_reserve() {
  head -c "$SPACE_RESERVE_BYTES" /dev/zero >"$1/.space-reserve" 2>/dev/null || rm -f "$1/.space-reserve"
}

# space_release RUN_DIR: give the reserve back (at the end of any run).
space_release() {
  rm -f "$1/.space-reserve"
}

# space_full DIR: succeed when DIR's file system has less than
# SPACE_FULL_BYTES free.
space_full() {
  local free
  free="$(space_free "$1")"
  [[ "$free" =~ ^[0-9]+$ ]] && ((free < SPACE_FULL_BYTES))
}

# space_clean RUN_DIR: remove the temporary files (NAME.tmp.PID) a writer
# cut off by a full disk left in the run's directory.
space_clean() {
  find "$1" -maxdepth 3 -type f -name '*.tmp.[0-9]*' -delete 2>/dev/null || true
}

# space_stop_when_full CELL_DIR: after a cell: when the disk of the run is
# full, drop the cell (its files are cut off: RESUME runs it again), give
# the reserve back, remove temporary files, say so in one line and fail.
space_stop_when_full() {
  local cell_dir="$1"
  space_full "$LT_RUN_DIR" || return 0
  space_release "$LT_RUN_DIR"
  rm -rf "$cell_dir"
  space_clean "$LT_RUN_DIR"
  say "no space left on $(space_mount "$LT_RUN_DIR") (results in $LT_RUN_DIR): the run stops; free some space there and continue it with RESUME=$LT_RUN_ID"
  return 1
}
