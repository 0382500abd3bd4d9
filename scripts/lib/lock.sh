# shellcheck shell=bash
# Summary: one run at a time on this host: the run lock, its state file, the
# run's temporary directory, the runner's traps (a signal or any exit
# cleans up), and ending what a killed run left.
#
# The lock lives in a directory of the suite's own, /run/lock/ltsuite, made
# by the runner with mode 0700 (lock_open): /run/lock itself is every local
# user's (mode 1777), and there the kernel may follow another user's symlink
# (fs.protected_symlinks=0), swapped in between a check of a path and its
# open, so root would create the file it points at. In a directory only this
# user may write, no one else can put anything at the lock's names. The
# runner still opens, reads, writes or removes nothing there that is not this
# user's own regular file (never a symlink), writes the state through a new
# file and a rename (never through an existing name), and removes a
# temporary directory the state names only when it is one this suite made
# (lock_own_tmp_dir).
#
# Needs common.sh and manifest.sh (and, for on_exit, cell.sh, results.sh,
# report.sh and space.sh); the runner sets LT_RUN_ID, LT_RUN_DIR and
# LT_TMP_DIR.

LT_LOCK_FILE="${LT_LOCK_FILE:-/run/lock/ltsuite/run-matrix.lock}"
LT_LOCK_STATE="$LT_LOCK_FILE.pid"
# The run lock's descriptor: a fixed number, so that the launch line of every
# child that may outlive a step (the target, k6, the sampler, compose) can
# close it (9>&-). A child that kept it would hold the lock after a killed
# runner, and every later run would refuse to start.
LT_LOCK_FD=9
# The name of every run's temporary directory (mktemp's Xs follow).
LT_TMP_PREFIX=ltsuite-run.

# lock_path_problem PATH: why PATH may not be used by this user (a symlink,
# not a regular file, or another user's file), on stdout; nothing when it is
# missing or this user's own regular file.
lock_path_problem() {
  local path="$1"
  if [[ -L "$path" ]]; then
    printf '%s is a symlink (to %s)\n' "$path" "$(readlink "$path")"
  elif [[ -e "$path" && ! -f "$path" ]]; then
    printf '%s is not a regular file\n' "$path"
  elif [[ -e "$path" && ! -O "$path" ]]; then
    printf '%s belongs to uid %s, not to this user (uid %s)\n' "$path" "$(stat -c %u "$path")" "$EUID"
  fi
}

# lock_refuse_foreign PATH: stop, naming the problem, when PATH is not
# safe to open (lock_path_problem).
lock_refuse_foreign() {
  local problem
  problem="$(lock_path_problem "$1")"
  [[ -z "$problem" ]] \
    || abort "$problem; another user may have put it there: check it and remove it (rm -f '$1') before the next run"
}

# lock_dir_problem DIR: why DIR may not hold the lock (a symlink, not a
# directory, another user's, or writable by others), on stdout; nothing when
# it is this user's own directory that only this user may write.
lock_dir_problem() {
  local dir="$1" mode
  if [[ -L "$dir" ]]; then
    printf '%s is a symlink (to %s)\n' "$dir" "$(readlink "$dir")"
  elif [[ ! -d "$dir" ]]; then
    printf '%s is not a directory\n' "$dir"
  elif [[ ! -O "$dir" ]]; then
    printf '%s belongs to uid %s, not to this user (uid %s)\n' "$dir" "$(stat -c %u "$dir")" "$EUID"
  else
    mode="$(stat -c %a "$dir")"
    ((8#$mode & 8#022)) && printf '%s is writable by other users (mode %s)\n' "$dir" "$mode"
  fi
  return 0
}

# lock_open: the lock file open on LT_LOCK_FD (for flock), inside a
# directory only this user may write: its directory is made with mode 0700
# when missing (mkdir makes nothing through a symlink at its last name), and
# refused, naming why, when it is anything else (lock_dir_problem), before
# anything is opened there.
lock_open() {
  local dir problem
  dir="$(dirname "$LT_LOCK_FILE")"
  # shellcheck disable=SC2174 # SC2174: the mode is for the last directory only, the lock's own; its parents are /run/lock's
  [[ -e "$dir" || -L "$dir" ]] || mkdir -p -m 700 "$dir" 2>/dev/null || true
  problem="$(lock_dir_problem "$dir")"
  [[ -z "$problem" ]] \
    || abort "the run lock's directory $problem; another user may have put it there: check it and remove it before the next run, or set LT_LOCK_FILE in a directory of your own"
  lock_refuse_foreign "$LT_LOCK_FILE"
  lock_refuse_foreign "$LT_LOCK_STATE"
  exec 9>>"$LT_LOCK_FILE"
}

# take_lock: one run at a time on this host (namespaces and ports are shared).
# The kernel drops the lock when its holder dies, and no child keeps it (each
# closes LT_LOCK_FD), so a killed run leaves none; what it left running is
# ended first (end_dead_run). LT_LOCK_WAIT=SECONDS queues behind a running
# run instead of refusing.
take_lock() {
  local wait_s="${LT_LOCK_WAIT:-0}" ended=0
  [[ "$wait_s" =~ ^[0-9]+$ ]] || usage_error "LT_LOCK_WAIT: '$wait_s' is not a number of seconds"
  lock_open
  if ! flock -n "$LT_LOCK_FD"; then
    # A child of a killed run started before children closed the lock may
    # still hold it.
    if end_dead_run; then ended=1; fi
    if [[ "$wait_s" -gt 0 ]] && ! flock -n "$LT_LOCK_FD"; then
      say "waiting up to ${wait_s}s for the run that holds $LT_LOCK_FILE"
      flock -w "$wait_s" "$LT_LOCK_FD" || true
    fi
  fi
  if ! flock -n "$LT_LOCK_FD"; then
    abort "another run-matrix is running (lock $LT_LOCK_FILE held by $(lock_holders)); wait for it or stop it"
  fi
  ((ended)) || end_dead_run || true
  lock_state_write
}

# The current cell's processes that carry no run id, which run_pids cannot
# find after a kill -9: nginx (it rewrites its own command line and
# environment) and the delayer. "PID:START:WORD" each (lock_state_pids).
LT_LOCK_PIDS=()

# lock_state_write: the lock's state file, for the next run to tell a killed
# run from a running one: "PID START RUN_ID RUN_DIR TMP_DIR PIDS",
# tab-separated (START: the runner's start time, so a reused pid is not taken
# for it; PIDS: LT_LOCK_PIDS, space-separated). Written to a new file beside
# it and renamed over it: the rename replaces whatever is at the name (a
# planted symlink included) and follows nothing.
lock_state_write() {
  local tmp
  tmp="$(mktemp "$LT_LOCK_STATE.XXXXXX")"
  # shellcheck disable=SC2153 # SC2153: LT_RUN_ID is the runner's (run-matrix.sh), not a misspelling
  if ! printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$$" "$(process_start "$$")" "$LT_RUN_ID" "$LT_RUN_DIR" "$LT_TMP_DIR" \
    "${LT_LOCK_PIDS[*]}" >"$tmp" \
    || ! mv -fT "$tmp" "$LT_LOCK_STATE"; then
    rm -f "$tmp"
    return 1
  fi
}

# lock_state_pids [PID WORD]...: the current cell's processes that carry no
# run id (an empty PID is skipped; WORD: a word of its command line), in
# place of the last cell's, written to the lock's state when the state is
# this runner's, so that the next run can end them after a kill -9
# (end_dead_run). Each is recorded with its start time: a pid reused by
# another process is never taken for it.
lock_state_pids() {
  local line start had="${#LT_LOCK_PIDS[@]}"
  LT_LOCK_PIDS=()
  while [[ $# -ge 2 ]]; do
    if [[ "$1" =~ ^[0-9]+$ ]] && start="$(process_start "$1")"; then
      LT_LOCK_PIDS+=("$1:$start:$2")
    fi
    shift 2
  done
  # A cell without them after one without them: nothing to write.
  ((had > 0 || ${#LT_LOCK_PIDS[@]} > 0)) || return 0
  line="$(lock_state_read 2>/dev/null)" || return 0
  [[ "${line%%$'\t'*}" == "$$" ]] || return 0
  lock_state_write
}

# lock_state_pid_alive ENTRY: the pid of a "PID:START:WORD" entry of the
# state, on stdout, when that very process still runs: same start time, WORD
# in its command line. Fails otherwise.
lock_state_pid_alive() {
  local pid start word
  IFS=: read -r pid start word <<<"$1"
  [[ "$pid" =~ ^[0-9]+$ && "$pid" != "$$" && -n "$start" && -n "$word" ]] || return 1
  [[ "$(process_start "$pid" || true)" == "$start" ]] || return 1
  pid_running "$pid" || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$word" || return 1
  printf '%s\n' "$pid"
}

# lock_state_read: the state file's line, when it is this user's own
# regular file; else nothing (and a warning naming it when it is there).
lock_state_read() {
  local problem
  problem="$(lock_path_problem "$LT_LOCK_STATE")"
  if [[ -n "$problem" ]]; then
    warn "ignoring the lock's state: $problem"
    return 1
  fi
  [[ -s "$LT_LOCK_STATE" ]] || return 1
  head -n 1 "$LT_LOCK_STATE"
}

# lock_state_clear: a run that ends (however, but killed) leaves no state.
lock_state_clear() {
  local line
  line="$(lock_state_read 2>/dev/null)" || return 0
  [[ "${line%%$'\t'*}" != "$$" ]] || rm -f "$LT_LOCK_STATE"
}

# lock_holders: "pid N (COMMAND)" of every other process that has the lock
# file open; else the pid the lock's state names.
lock_holders() {
  local fd pid line
  local -a holders=()
  while IFS= read -r fd; do
    pid="${fd#/proc/}"
    pid="${pid%%/*}"
    [[ "$pid" != "$$" ]] || continue
    holders+=("pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null))")
  done < <(find /proc/[0-9]*/fd -maxdepth 1 -lname "$(readlink -f "$LT_LOCK_FILE")" 2>/dev/null)
  if [[ ${#holders[@]} -eq 0 ]]; then
    line="$(lock_state_read 2>/dev/null)" || line='?'
    holders=("pid ${line%%$'\t'*}")
  fi
  join_words ', ' "${holders[@]}"
}

# run_traps_set: the runner's traps: Ctrl-C (SIGINT), SIGTERM and a closed
# terminal (SIGHUP) stop the run as interrupted (on_signal); any exit cleans
# up (on_exit).
run_traps_set() {
  trap 'on_signal 1' HUP
  trap 'on_signal 2' INT
  trap 'on_signal 15' TERM
  trap on_exit EXIT
}

# trap_say MESSAGE: say, in a trap, where the terminal may be gone (a closed
# terminal's SIGHUP): a message that cannot be written is dropped, never
# the end of the clean-up.
trap_say() {
  say "$@" || true
}

# on_signal NUMBER: the run stops as interrupted, with the shell's status
# for that signal (128 + NUMBER: 129 SIGHUP, 130 SIGINT, 143 SIGTERM);
# on_exit cleans up.
on_signal() {
  # The first signal stops the run; one more (timeout(1) signals the runner,
  # then its process group; a second Ctrl-C) must not cut its clean-up short.
  trap '' PIPE INT TERM HUP
  LT_INTERRUPTED=1
  trap_say ""
  trap_say "interrupted: stopping k6 and the target, removing the namespaces"
  exit $((128 + $1))
}

# on_exit: whatever ended the run: stop the cell's processes, mark an
# unfinished run interrupted or failed and draw what it has, remove the
# temporary directory and the lock's state. Every step runs, whatever one
# before it did (no set -e here), and neither a terminal that is gone nor
# one more signal stops it: a run killed midway here would leave its target
# running and its namespaces behind until the next run (end_dead_run). Each
# step is bounded in time (end_child); SIGKILL still ends it.
on_exit() {
  local status=$?
  set +e
  trap '' PIPE INT TERM HUP
  trap - EXIT
  stop_cell_processes
  # A cell's finish still running (cell_finish_begin): its row, its line.
  cell_finish_wait
  run_end_leftovers
  # The reserve given back first: on a full disk the manifest still fits.
  [[ -z "$LT_RUN_DIR" ]] || space_release "$LT_RUN_DIR"
  if [[ -n "$LT_RUN_DIR" && $LT_FINISHED -eq 0 ]]; then
    manifest_finish "$LT_RUN_DIR" "$([[ $LT_INTERRUPTED -eq 1 ]] && echo interrupted || echo failed)"
    results_render "$LT_RUN_DIR"
    report_render "$LT_RUN_DIR"
    trap_say "run $LT_RUN_ID $([[ $LT_INTERRUPTED -eq 1 ]] && echo interrupted || echo stopped); finished cells are kept in ${LT_RUN_DIR#"$LT_ROOT"/}"
  fi
  [[ -z "$LT_RUN_DIR" ]] || space_clean "$LT_RUN_DIR"
  [[ -z "$LT_TMP_DIR" ]] || rm -rf "$LT_TMP_DIR"
  [[ -z "${LT_PLAN_DIR:-}" ]] || rm -rf "$LT_PLAN_DIR"
  lock_state_clear
  exit "$status"
}

# run_end_leftovers: end (by pid) every process that still carries this run's
# id (run_pids: the target's JVM, k6, the sampler, a TARGET_CMD server) once
# the cell's processes were stopped: one started just as a signal came, before
# the line that keeps its pid ran (target_start's TARGET_PID=$!), has no pid
# for stop_cell_processes, and would run on unattended. Says which.
run_end_leftovers() {
  [[ -n "${LT_RUN_ID:-}" ]] || return 0
  local -a pids=()
  mapfile -t pids < <(run_pids "$LT_RUN_ID")
  [[ ${#pids[@]} -gt 0 ]] || return 0
  trap_say "ending what started as the run stopped: pid $(join_words ', ' "${pids[@]}")"
  end_pids TERM 10 "${pids[@]}" || true
}

# run_tmp_dir: the run's temporary directory (TMPDIR for everything the run
# starts, so every temporary file of it goes with it on any exit: on_exit, or
# the next run's end_dead_run).
run_tmp_dir() {
  LT_TMP_DIR="$(mktemp -d "${TMPDIR:-/tmp}/$LT_TMP_PREFIX"XXXXXX)"
  export TMPDIR="$LT_TMP_DIR"
}

# lock_own_tmp_dir PATH: succeed when PATH is a temporary directory of a run
# (run_tmp_dir): an absolute path whose name is LT_TMP_PREFIX and six
# characters, a directory and not a symlink, owned by this user and
# writable by no one else.
lock_own_tmp_dir() {
  local path="$1" mode
  [[ "$path" == /* && "$path" != *"/../"* ]] || return 1
  [[ "$(basename "$path")" =~ ^${LT_TMP_PREFIX//./\\.}[A-Za-z0-9]{6}$ ]] || return 1
  [[ -d "$path" && ! -L "$path" && -O "$path" ]] || return 1
  mode="$(stat -c %a "$path")" || return 1
  [[ "$mode" == 700 ]]
}

# process_start PID: the process's start time (clock ticks after boot,
# /proc/PID/stat field 22); fails when there is no such process.
process_start() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  # The fields after the command name, which may hold spaces: field 3 on.
  local -a fields
  read -r -a fields <<<"${stat##*) }"
  printf '%s\n' "${fields[19]}"
}

# end_dead_run: a runner that was killed (kill -9, an OOM kill) cleaned
# nothing up: its target, k6, sampler, nginx and delayer may still run, its temporary
# directory stays, its manifest says running. The lock's state names that
# run (read only when it is this user's own file: lock_state_read); when its
# runner is gone, end (by pid) every process that carries its run id
# (run_pids) and those the state names that are still the same processes
# (lock_state_pid_alive), remove its temporary directory (only one a run made:
# lock_own_tmp_dir), mark its manifest interrupted, and say so. Its
# namespaces and container go next (remove_stale_namespaces). Fails when no
# dead run is named.
# shellcheck disable=SC2016 # SC2016: jq programs are in single quotes on purpose: their $names are theirs
end_dead_run() {
  local line pid="" start="" run_id="" run_dir="" tmp_dir=""
  line="$(lock_state_read)" || return 1
  # Split at every tab (read would take two tabs as one: an empty field).
  local -a fields=()
  mapfile -t -d $'\t' fields < <(printf '%s' "$line")
  pid="${fields[0]:-}" start="${fields[1]:-}" run_id="${fields[2]:-}" run_dir="${fields[3]:-}" tmp_dir="${fields[4]:-}"
  [[ "$pid" =~ ^[0-9]+$ && "$pid" != "$$" && -n "$start" ]] || return 1
  [[ "$(process_start "$pid" || true)" != "$start" ]] || return 1
  local -a pids=() names=() entries=()
  local p entry
  [[ -z "$run_id" ]] || mapfile -t pids < <(run_pids "$run_id")
  # nginx and the delayer, recorded by pid (lock_state_pids).
  read -r -a entries <<<"${fields[5]:-}"
  for entry in "${entries[@]}"; do
    p="$(lock_state_pid_alive "$entry")" || continue
    [[ " ${pids[*]} " == *" $p "* ]] || pids+=("$p")
  done
  for p in "${pids[@]}"; do
    names+=("pid $p ($(cat "/proc/$p/comm" 2>/dev/null || echo gone))")
  done
  warn "run ${run_id:-(not named yet)} (runner pid $pid) was killed before it could clean up"
  if [[ ${#pids[@]} -gt 0 ]]; then
    say "ending what it left running: $(join_words ', ' "${names[@]}")"
    end_pids TERM 10 "${pids[@]}" || true
  fi
  if [[ -n "$tmp_dir" && -e "$tmp_dir" ]]; then
    if lock_own_tmp_dir "$tmp_dir"; then
      say "removing its temporary directory $tmp_dir"
      rm -rf "$tmp_dir"
    else
      warn "not removing $tmp_dir: not a temporary directory of a run (${LT_TMP_PREFIX}XXXXXX, this user's, mode 700)"
    fi
  fi
  if [[ -n "$run_dir" ]] && jq -e '.status == "running"' "$run_dir/manifest.json" >/dev/null 2>&1; then
    manifest_update "$run_dir" '.status = "interrupted" | .warnings += [$w]' \
      --arg w "the runner (pid $pid) was killed; the next run ended what it left at $(date -u +%Y-%m-%dT%H:%M:%SZ)" || true
  fi
  [[ -z "$run_id" ]] || end_dead_run_container "$run_id"
  return 0
}

# run_pids RUN_ID: the pids of the processes that carry RUN_ID: the target's
# JVM (-Dltsuite.run_id=), k6 and its timeout (-e LT_RUN_ID=), the sampler
# (--k6-mark LT_RUN_ID=) in their arguments, a TARGET_CMD server (and what it
# started) in its environment (LT_RUN_ID=). Never this process.
run_pids() {
  local file pid
  local -a files=(/proc/[0-9]*/cmdline /proc/[0-9]*/environ)
  printf '%s\n' "-Dltsuite.run_id=$1" "LT_RUN_ID=$1" \
    | grep -zlxF -f - "${files[@]}" 2>/dev/null \
    | tr '\0' '\n' \
    | while IFS= read -r file; do
      pid="${file#/proc/}"
      pid="${pid%%/*}"
      [[ "$pid" == "$$" || "$pid" == "$BASHPID" ]] || printf '%s\n' "$pid"
    done | sort -un
}

# end_dead_run_container RUN_ID: a BACKEND=compose target container labelled
# with RUN_ID (when a Docker engine answers).
end_dead_run_container() {
  command -v docker >/dev/null || return 0
  local id
  for id in $(timeout 10 docker ps -aq --filter "label=ltsuite.run_id=$1" 2>/dev/null); do
    say "removing its container $id"
    timeout 30 docker rm --force "$id" >/dev/null 2>&1 || true
  done
}
