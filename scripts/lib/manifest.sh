# shellcheck shell=bash
# Summary: the run's manifest.json (identity, versions, status, warnings).

# manifest_git_commit: the suite's commit, "-dirty" when a tracked file
# differs from it ("unknown" outside a git checkout).
manifest_git_commit() {
  local commit
  commit="$(git -C "$LT_ROOT" rev-parse HEAD 2>/dev/null || printf 'unknown')"
  if [[ -n "$(git -C "$LT_ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
    commit+="-dirty"
  fi
  printf '%s\n' "$commit"
}

# manifest_git_diff_sha256: the sha256 of the suite's uncommitted changes to
# tracked files (git diff HEAD), empty when there are none (or outside a git
# checkout): two "-dirty" runs of one commit are the same suite only when
# this is the same.
manifest_git_diff_sha256() {
  local diff
  diff="$(git -C "$LT_ROOT" diff HEAD --no-ext-diff --binary 2>/dev/null)" || return 0
  [[ -z "$diff" ]] || printf '%s\n' "$diff" | sha256sum | cut -d' ' -f1
}

# run_format: the format of the run files this suite writes and reads (RUN_FORMAT
# of scripts/formats.env; scripts/ltsuite/formats.py reads the same line).
run_format() {
  cell_env_get "$LT_ROOT/scripts/formats.env" RUN_FORMAT
}

# run_format_check RUN_DIR: nothing when RUN_DIR's manifest.json and every
# cells/*/row.json are in run_format (a file without "format" is format 1,
# the layout before the key); a usage error naming the first file that is not,
# before anything reads its keys. The rule is scripts/ltsuite/formats.py's.
run_format_check() {
  local run_dir="$1" format refused files=()
  format="$(run_format)"
  [[ ! -f "$run_dir/manifest.json" ]] || files+=("$run_dir/manifest.json")
  files+=("$run_dir"/cells/*/row.json)
  refused="$(jq -r --argjson want "$format" \
    'select(type == "object" and (.format // 1) != $want) | "\(input_filename): format \(.format | tojson)"' \
    "${files[@]}" 2>/dev/null | head -n 1)" || true
  [[ -z "$refused" ]] \
    || usage_error "$refused, but this suite reads format $format (scripts/formats.env): read it with the suite's version that wrote it"
}

# manifest_versions: the tools a run's figures depend on, {k6, java,
# kernel}: k6's version, the first line of `java -version` and the kernel's
# release.
manifest_versions() {
  jq -n --arg k6 "$(k6_version)" --arg java "$(java -version 2>&1 | head -n 1)" --arg kernel "$(uname -r)" \
    '{k6: $k6, java: $java, kernel: $kernel}'
}

# manifest_config_changes MANIFEST: what differs between the suite and tools
# an earlier run recorded in MANIFEST and those here now, one line each
# ("k6 version (k6 v1.9.0, was k6 v1.8.1)"); nothing when all is the same.
# What the run did not record (an older manifest) is not compared; nor is
# java for BACKEND=compose, whose java is the container's.
# shellcheck disable=SC2016 # SC2016: jq programs are in single quotes on purpose: their $names are theirs
manifest_config_changes() {
  local manifest="$1"
  jq -r --arg commit "$(manifest_git_commit)" --arg diff "$(manifest_git_diff_sha256)" \
    --argjson now "$(manifest_versions)" '
    def changed($what; $was; $is): if $was == null or $was == $is then empty
      else "\($what) (\(if $is == "" then "none" else $is end), was \(if $was == "" then "none" else $was end))" end;
    changed("the suite'"'"'s git commit"; .git_commit; $commit),
    (if .git_commit == $commit then changed("the suite'"'"'s uncommitted changes, sha256 of git diff HEAD"; .git_diff_sha256; $diff) else empty end),
    changed("k6 version"; .versions.k6; $now.k6),
    (if .backend == "compose" then empty else changed("java version"; .versions.java; $now.java) end),
    changed("kernel release"; .versions.kernel; $now.kernel)' "$manifest"
}

# manifest_inputs VALUES_ASSOC: the files the cells depend on besides the
# matrix and the suite's scripts, {"PATH": "SHA256"} (PATH relative to the
# suite when inside it; "missing" for a file that is not there): the knobs'
# defaults and the sysctl whitelist, the target's jar (TARGET_JAR, or the
# suite's own when the suite starts it), TARGET_ENV_FILE, every scenario file
# of the suite and every script of one's own. A resumed run must find them
# unchanged (run-matrix.sh resume_check_inputs).
manifest_inputs() {
  local -n input_values="$1"
  local word
  local -a files=("$LT_ROOT/env/defaults.env" "$LT_ROOT/env/sysctls.tsv") words
  if [[ -z "${input_values[TARGET_JAR]}${input_values[TARGET_CMD]}${input_values[TARGET_URL]}" ]]; then
    files+=("$TARGET_OWN_JAR")
  fi
  read -r -a words <<<"${input_values[TARGET_JAR]} ${input_values[TARGET_ENV_FILE]}"
  files+=("${words[@]}")
  mapfile -t -O "${#files[@]}" files < <(find "$LT_ROOT/scenarios" -type f -name '*.js' | LC_ALL=C sort)
  read -r -a words <<<"${input_values[SCENARIO]}"
  for word in "${words[@]}"; do
    k6_own_script "$word" && files+=("$word")
  done
  local file line sum
  local -A sums=()
  # The suite's own jar's, as make wrote it beside the jar it built (newer
  # than the jar, so of this build): 25 MB are 0.1 s to sum.
  if [[ -s "$TARGET_OWN_JAR.sha256" && "$TARGET_OWN_JAR.sha256" -nt "$TARGET_OWN_JAR" ]] \
    && read -r sum <"$TARGET_OWN_JAR.sha256" && [[ "$sum" =~ ^[0-9a-f]{64}$ ]]; then
    sums["$TARGET_OWN_JAR"]="$sum"
  fi
  # One sha256sum for the others ("SUM  FILE" lines; a name it had to escape
  # starts with a backslash and is summed alone below).
  local -a to_sum=()
  for file in "${files[@]}"; do
    [[ -n "${sums[$file]:-}" ]] || to_sum+=("$file")
  done
  while IFS= read -r line; do
    [[ "$line" != \\* ]] || continue
    sums["${line#*  }"]="${line%%  *}"
  done < <(sha256sum -- "${to_sum[@]}" 2>/dev/null)
  for file in "${files[@]}"; do
    sum="${sums[$file]:-}"
    [[ -n "$sum" || ! -f "$file" ]] || sum="$(sha256sum <"$file" 2>/dev/null)" sum="${sum%% *}"
    printf '%s\t%s\n' "${file#"$LT_ROOT"/}" "${sum:-missing}"
  done | jq -Rn '[inputs | split("\t") | {key: .[0], value: .[1]}] | from_entries'
}

# manifest_create RUN_DIR MATRIX_FILE PLAN: the manifest of a new run (with
# the inputs of MATRIX_VALUE's cells, manifest_inputs; its axes, AXIS_KEYS;
# and PLAN, run_plan's lines as one string, with MATRIX_VALUE's REPEAT and
# REPEAT_SEED). Its two slow parts, the inputs' checksums (the suite's jar
# is 25 MB: about 0.1 s) and the tools' versions (java's a JVM start), run
# beside each other and the rest; one jq start writes it.
manifest_create() {
  local run_dir="$1" matrix="$2" plan="$3" commit inputs_fd versions_fd inputs versions
  exec {inputs_fd}< <(manifest_inputs MATRIX_VALUE)
  exec {versions_fd}< <(manifest_versions)
  commit="$(manifest_git_commit)"
  inputs="$(cat <&"$inputs_fd")"
  versions="$(cat <&"$versions_fd")"
  exec {inputs_fd}<&- {versions_fd}<&-
  [[ -n "$inputs" && -n "$versions" ]] || return 1
  jq -n \
    --argjson format "$(run_format)" \
    --arg run_id "$LT_RUN_ID" \
    --arg matrix "${matrix#"$LT_ROOT"/}" \
    --arg sha "$(sha256sum "$matrix" | cut -d' ' -f1)" \
    --arg commit "$commit" \
    --arg diff "$(manifest_git_diff_sha256)" \
    --argjson versions "$versions" \
    --arg backend "$LT_BACKEND" \
    --arg started "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    --arg axes "$(printf '%s\n' "${AXIS_KEYS[@]}")" \
    --arg overrides "$LT_OVERRIDES" \
    --arg nofile "$(ulimit -n)" \
    --argjson cpus "$(nproc)" \
    --argjson inputs "$inputs" \
    --argjson n "${MATRIX_VALUE[REPEAT]}" --arg seed "${MATRIX_VALUE[REPEAT_SEED]}" --arg plan "$plan" \
    'def lines: split("\n") | map(select(length > 0));
     ($plan | lines | map(split(" ") | {index: (.[0] | tonumber), repeat: (.[1] | tonumber), cell: .[2]})) as $plan
     | {format: $format, run_id: $run_id, matrix: $matrix, matrix_sha256: $sha, git_commit: $commit, git_diff_sha256: $diff,
      versions: $versions, backend: $backend,
      started_at: $started, ended_at: null, resumed_at: [], status: "running",
      axes: ($axes | lines), cells_total: ($plan | length), cells_done: 0, cells_failed: 0,
      cells_as_designed: 0, first_design_reason: null,
      overrides: ($overrides | lines),
      limits: {nofile: (if $nofile == "unlimited" then null else ($nofile | tonumber) end), cpus: $cpus}, inputs: $inputs,
      warnings: [], repeat: {n: $n, seed: $seed}, plan: $plan}' \
    | write_atomic "$run_dir/manifest.json"
}

# manifest_update RUN_DIR JQ_FILTER [jq args...]: rewrite the manifest, one
# writer at a time (a lock on RUN_DIR): a cell's finish counts its row
# while the next cell starts (cell_finish_begin), and a read and a rename
# of another writer between them would lose one of the two.
manifest_update() {
  local run_dir="$1" filter="$2" lock_fd status=0
  shift 2
  exec {lock_fd}<"$run_dir" || return 1
  flock "$lock_fd" || true
  jq "$@" "$filter" "$run_dir/manifest.json" | write_atomic "$run_dir/manifest.json" || status=$?
  exec {lock_fd}<&-
  return "$status"
}

# manifest_warn RUN_DIR MESSAGE: add a warning (kept once).
# shellcheck disable=SC2016 # SC2016: jq and awk programs are in single quotes on purpose: their $names are theirs
manifest_warn() {
  manifest_update "$1" '.warnings |= (. + [$w] | unique)' --arg w "$2"
}

# manifest_finish RUN_DIR STATUS: record the end of the run.
manifest_finish() {
  manifest_finished "$@" | write_atomic "$1/manifest.json"
}

# manifest_finished RUN_DIR STATUS [WARNING]: the manifest as it is at the
# end of the run (STATUS, the time, WARNING added when given, and the
# cells' counts from their rows: report-page.jq's cell_counts), on stdout.
# One jq start. Needs results.sh (results_rows).
# shellcheck disable=SC2016 # SC2016: jq and awk programs are in single quotes on purpose: their $names are theirs
manifest_finished() {
  local now
  now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  jq -L "$LT_ROOT/scripts/lib" --slurpfile rows <(results_rows "$1") \
    'include "report-page"; cell_counts($rows) | .status = $s | .ended_at = $t
      | if $w == "" then . else .warnings += [$w] end' \
    --arg s "$2" --arg t "$now" --arg w "${3:-}" "$1/manifest.json"
}
