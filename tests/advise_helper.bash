# shellcheck shell=bash
# One make advise per test file (setup_file), read by its tests: for the
# tests/integration/advise*.bats files. Load after test_helper.

# advise_once FILE: in setup_file, as root, make advise of FILE (absolute,
# or from the repository's root, where the advice starts: the file's own
# paths are relative to it) into the test file's own results directory
# (LT_RESULTS_DIR, exported for the tests). Its stdout goes to advise.out,
# its stderr to advise.log and its exit status to advise.status, in
# BATS_FILE_TMPDIR. Without root it does nothing (the tests say why).
advise_once() {
  [[ $EUID -eq 0 ]] || return 0
  export LT_RESULTS_DIR="$BATS_FILE_TMPDIR/results"
  local status=0
  cd "$LT_ROOT" || return 1
  scripts/advise.sh "$1" >"$BATS_FILE_TMPDIR/advise.out" 2>"$BATS_FILE_TMPDIR/advise.log" || status=$?
  printf '%s\n' "$status" >"$BATS_FILE_TMPDIR/advise.status"
}

# advice_dir NAME: the directory of the advice of NAME.env (advise_once),
# after checking make advise succeeded.
advice_dir() {
  [ "$(cat "$BATS_FILE_TMPDIR/advise.status")" -eq 0 ] \
    || { fail "$(tail -n 30 "$BATS_FILE_TMPDIR/advise.log")"; return 1; }
  local dirs=("$BATS_FILE_TMPDIR"/results/advise-*-"$1")
  printf '%s\n' "${dirs[0]}"
}
