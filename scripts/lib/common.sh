# shellcheck shell=bash
# Summary: helpers shared by every script: repo root, messages, exit codes.

# Exit codes: usage and bad input differ from failures at run time, so a
# caller (or a test) can tell "you asked for something wrong" from "it broke".
readonly EX_FAILURE=1
readonly EX_USAGE=2

# The repository root, found from this file rather than the current directory.
LT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export LT_ROOT

# The Python interpreter itself, found once and exported to every script the
# run starts: a version manager's shim (pyenv's python3 is a bash script)
# costs about 60 ms a call on these machines, and a cell calls Python several
# times. The path in PATH when it is a program (no Python start to ask it),
# the interpreter a script there runs (asked once: sys.executable), "python3"
# when there is none (require_runtime says so).
if [[ -z "${LT_PYTHON:-}" ]]; then
  LT_PYTHON="$(command -v python3 || true)"
  if [[ -z "$LT_PYTHON" ]]; then
    LT_PYTHON=python3
  elif [[ "$(head -c 2 "$LT_PYTHON" 2>/dev/null)" == '#!' ]]; then
    LT_PYTHON="$("$LT_PYTHON" -c 'import sys; print(sys.executable)' 2>/dev/null)" || LT_PYTHON=python3
    [[ -n "$LT_PYTHON" ]] || LT_PYTHON=python3
  fi
  export LT_PYTHON
fi

# Why the current cell (or the one cell a fan-out sends) failed: empty while
# nothing has. Said only through cell_error; the runner reads it once, after
# the cell's steps, into the row's error (run_cell, cell.sh).
CELL_ERROR=""

# cell_error REASON: the one writer of CELL_ERROR. A step that fails says why
# with it and returns 1 (`cell_error "nginx did not start"; return 1`); the
# runner clears it with an empty REASON before each cell. It returns 0, so
# it never trips errexit where the step's own status does the telling.
cell_error() {
  # shellcheck disable=SC2034 # SC2034: read by the scripts that source this file
  CELL_ERROR="$1"
}

# abort [code] message...: print "name: message" to stderr and exit.
abort() {
  local code="$EX_FAILURE"
  if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
    code="$1"
    shift
  fi
  printf '%s: %s\n' "${LT_PROG:-${0##*/}}" "$*" >&2
  exit "$code"
}

# usage_error message...: bad input; exit status 2.
usage_error() {
  abort "$EX_USAGE" "$@"
}

# say message...: progress for the operator, on stderr so stdout stays data.
say() {
  printf '%s\n' "$*" >&2
}

# warn message...: a problem that does not stop the run.
warn() {
  printf '%s: warning: %s\n' "${LT_PROG:-${0##*/}}" "$*" >&2
}

# join_words SEPARATOR WORD...: the WORDs joined by SEPARATOR.
join_words() {
  local separator="$1" joined
  shift
  joined="$(printf "%s$separator" "$@")"
  printf '%s' "${joined%"$separator"}"
}

# url_credentials URL: the user information of URL ("user:password" of
# http://user:password@host/), as written there (percent-encoded); nothing
# when it has none.
url_credentials() {
  [[ "$1" =~ ^[A-Za-z][A-Za-z0-9+.-]*://([^/@]*)@ ]] && printf '%s\n' "${BASH_REMATCH[1]}"
  return 0
}

# url_without_credentials URL: URL without its user information: what may
# be shown, written to a file or put on a command line.
url_without_credentials() {
  if [[ "$1" =~ ^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@(.*)$ ]]; then
    printf '%s\n' "${BASH_REMATCH[1]}${BASH_REMATCH[2]}"
  else
    printf '%s\n' "$1"
  fi
}

# print_summary FILE: the "# Summary:" and "# Usage:" lines of a script.
print_summary() {
  sed -n 's/^# \(Summary\|Usage\):/\1:/p' "$1"
}

# go_proxy_without_direct: the configured Go module proxy without the
# ",direct" fallback, so a module the proxy refuses fails at once instead of
# hanging on a fetch from its origin.
go_proxy_without_direct() {
  local proxy
  proxy="$(go env GOPROXY)"
  proxy="${proxy//,direct/}"
  proxy="${proxy//|direct/}"
  [[ -n "$proxy" && "$proxy" != direct && "$proxy" != off ]] \
    || abort "GOPROXY is '$(go env GOPROXY)'; set it to a Go module proxy"
  printf '%s\n' "$proxy"
}

# end_pids SIGNAL TIMEOUT_S ID...: end processes in bounded time: SIGNAL to
# each ID (a pid, or a negative pid for a whole process group; 0: none, they
# were signalled already), SIGKILL to those still there once TIMEOUT_S
# seconds pass, then up to 5 s for them to go. Checked every 5 ms for the
# first 40 ms, then every 20: a cell waits, one step after the other, for
# its sampler (gone a few ms after SIGTERM) and the target's JVM (about 40
# ms). Fails when it had to kill. The one "stop a process" of the suite:
# stop_pid, end_child and the lock's cleaning of a dead run use it.
end_pids() {
  local signal="$1" timeout_s="$2" waited_ms=0
  shift 2
  [[ $# -gt 0 ]] || return 0
  [[ "$signal" == 0 ]] || kill -"$signal" -- "$@" 2>/dev/null || true
  while ((waited_ms < timeout_s * 1000)); do
    ids_alive "$@" >/dev/null || return 0
    if ((waited_ms < 40)); then
      sleep 0.005
      waited_ms=$((waited_ms + 5))
    else
      sleep 0.02
      waited_ms=$((waited_ms + 20))
    fi
  done
  local -a left=()
  mapfile -t left < <(ids_alive "$@")
  [[ ${#left[@]} -gt 0 ]] || return 0
  kill -KILL -- "${left[@]}" 2>/dev/null || true
  for ((i = 0; i < 250; i++)); do
    ids_alive "${left[@]}" >/dev/null || break
    sleep 0.02
  done
  return 1
}

# ids_alive ID...: print each ID still there (a pid running and not a zombie,
# or a negative pid whose process group has a member); fail when none is.
ids_alive() {
  local id found=1
  for id in "$@"; do
    if [[ "$id" == -* ]]; then
      kill -0 -- "$id" 2>/dev/null || continue
    else
      pid_running "$id" || continue
    fi
    printf '%s\n' "$id"
    found=0
  done
  return "$found"
}

# stop_pid PID TIMEOUT_S: SIGTERM to PID (a negative PID: its whole process
# group), SIGKILL once TIMEOUT_S seconds pass. Fails when it had to kill.
stop_pid() {
  end_pids TERM "$2" "$1"
}

# pid_running PID: the process exists and is not a zombie (kill -0 succeeds
# on a zombie that waits to be reaped).
pid_running() {
  local stat
  # The shell's own read: a poll every few ms (end_pids) starts no process.
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  [[ "${stat##*) }" != Z* ]]
}

# end_child PID SIGNAL TIMEOUT_S: end a child of this shell and reap it, in
# bounded time: SIGNAL to it (0: none, it was signalled already), SIGKILL
# once TIMEOUT_S seconds pass with it still running (end_pids checks it),
# and `wait` only while the kernel still holds it (a zombie). A child gone
# from /proc was reaped already, and bash may not know it: one that died of
# the Ctrl-C that interrupted the runner's own `wait` (nginx, the delayer:
# they handle SIGINT) can be reaped as bash's trap jumps out of that wait,
# its status lost, and a later `wait PID` then blocks until every other
# child ends (the target's JVM, which nobody signals). Its exit status when
# it was reaped here, else 0.
end_child() {
  local pid="$1" signal="$2" timeout_s="$3" status=0
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  end_pids "$signal" "$timeout_s" "$pid" || true
  [[ -e "/proc/$pid" ]] || return 0
  pid_running "$pid" && return 137
  wait "$pid" 2>/dev/null || status=$?
  return "$status"
}

# end_child_in VAR SIGNAL TIMEOUT_S: end_child of the background process
# whose pid the variable VAR holds (nothing when it is empty), then empty
# VAR: how each helper of a cell (the warm-up's k6, the sampler, the live
# line, the delayer, nginx) is stopped.
end_child_in() {
  local _pid="${!1}"
  [[ -n "$_pid" ]] || return 0
  end_child "$_pid" "$2" "$3" || true
  printf -v "$1" '%s' ""
}

# load_cell_env FILE ASSOC: read a cell.env (matrix_cell_values' output, one
# KEY=VALUE a line, never sourced) into ASSOC. The one reader of cell.env.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
load_cell_env() {
  local file="$1" line
  local -n into="$2"
  while IFS= read -r line; do
    [[ "$line" == *=* ]] || continue
    into[${line%%=*}]="${line#*=}"
  done <"$file"
}

# cell_env_get FILE KEY: one value of a cell.env (empty when it has none).
cell_env_get() {
  local -A got=()
  load_cell_env "$1" got
  printf '%s\n' "${got[$2]:-}"
}

# k6_own_script SCENARIO: succeed when SCENARIO is a k6 script of one's own
# (a path) rather than the name of a shipped one. The one test of it: the
# knob checks, the runner and the fan-outs all ask here.
k6_own_script() {
  [[ "$1" == */* || "$1" == *.js ]]
}
