#!/usr/bin/env bats
# What a manifest records of the suite and its tools, and what RESUME
# compares: the commit, its uncommitted changes, k6, java and the kernel.
# shellcheck disable=SC2034 # SC2034: read by the sourced library under test

setup() {
  load '../test_helper'
  lt_source_libs results netns k6 manifest
  # A checkout of its own, so its uncommitted changes are the test's.
  REPO="$BATS_TEST_TMPDIR/repo"
  mkdir -p "$REPO"
  git -C "$REPO" init -q
  printf 'a\n' >"$REPO/file"
  git -C "$REPO" add file
  git -C "$REPO" -c user.email=t@t -c user.name=t commit -qm one
  LT_ROOT="$REPO"
  MANIFEST="$BATS_TEST_TMPDIR/manifest.json"
}

# record: a manifest as a run here and now would write it.
record() {
  jq -n --arg commit "$(manifest_git_commit)" --arg diff "$(manifest_git_diff_sha256)" \
    --argjson versions "$(manifest_versions)" \
    '{git_commit: $commit, git_diff_sha256: $diff, versions: $versions, backend: "netns"}' >"$MANIFEST"
}

@test "the same suite and tools: nothing differs" {
  printf 'b\n' >"$REPO/file"
  record
  run manifest_config_changes "$MANIFEST"
  assert_success
  assert_output ''
}

@test "other uncommitted changes of the same commit are named, with both digests" {
  printf 'b\n' >"$REPO/file"
  record
  local was
  was="$(jq -r .git_diff_sha256 "$MANIFEST")"
  [ -n "$was" ]
  printf 'c\n' >"$REPO/file"
  run manifest_config_changes "$MANIFEST"
  assert_output "the suite's uncommitted changes, sha256 of git diff HEAD ($(manifest_git_diff_sha256), was $was)"
  # Committed since: the commit differs (and is what is named).
  git -C "$REPO" -c user.email=t@t -c user.name=t commit -qam two
  run manifest_config_changes "$MANIFEST"
  assert_output --regexp "^the suite's git commit \\([0-9a-f]{40}, was [0-9a-f]{40}-dirty\\)$"
}

@test "another k6, java or kernel is named, with both versions" {
  record
  jq '.versions = {k6: "k6 v0.1.0", java: "openjdk version \"1.0\"", kernel: "2.6.32"}' "$MANIFEST" >"$MANIFEST.2"
  run manifest_config_changes "$MANIFEST.2"
  assert_line "k6 version ($(k6_version), was k6 v0.1.0)"
  assert_line "java version ($(java -version 2>&1 | head -n 1), was openjdk version \"1.0\")"
  assert_line "kernel release ($(uname -r), was 2.6.32)"
  # BACKEND=compose records the container's java: not compared with this host's.
  jq '.backend = "compose"' "$MANIFEST.2" >"$MANIFEST.3"
  run manifest_config_changes "$MANIFEST.3"
  refute_output --partial "java version"
  # A manifest from before these were recorded: nothing to compare.
  printf '{}\n' >"$MANIFEST.4"
  run manifest_config_changes "$MANIFEST.4"
  assert_output ''
}

@test "the inputs' checksums: the suite's jar's from the sum make wrote beside it when newer than the jar, else summed" {
  TARGET_OWN_JAR="$BATS_TEST_TMPDIR/own.jar"
  mkdir -p "$LT_ROOT/env" "$LT_ROOT/scenarios"
  printf 'A=1\n' >"$LT_ROOT/env/defaults.env"
  printf 'x\n' >"$LT_ROOT/env/sysctls.tsv"
  printf 'export default function () {}\n' >"$LT_ROOT/scenarios/spike.js"
  printf 'jar\n' >"$TARGET_OWN_JAR"
  local real
  real="$(sha256sum "$TARGET_OWN_JAR" | cut -d' ' -f1)"
  declare -A values=([TARGET_JAR]="" [TARGET_CMD]="" [TARGET_URL]="" [TARGET_ENV_FILE]="" [SCENARIO]=spike)
  # make's sum, written after the jar: taken as it is (here one that is not the jar's, to tell).
  touch -d '1 minute ago' "$TARGET_OWN_JAR"
  printf '%064d\n' 7 >"$TARGET_OWN_JAR.sha256"
  run manifest_inputs values
  assert_success
  [ "$(jq -r --arg j "$TARGET_OWN_JAR" '.[$j]' <<<"$output")" = "$(printf '%064d' 7)" ]
  [ "$(jq -r '.["env/defaults.env"]' <<<"$output")" = "$(sha256sum "$LT_ROOT/env/defaults.env" | cut -d' ' -f1)" ]
  [ "$(jq -r '.["scenarios/spike.js"]' <<<"$output")" = "$(sha256sum "$LT_ROOT/scenarios/spike.js" | cut -d' ' -f1)" ]
  # A jar built since (newer than its sum), or a sum that is not one: summed here.
  touch "$TARGET_OWN_JAR"
  run manifest_inputs values
  [ "$(jq -r --arg j "$TARGET_OWN_JAR" '.[$j]' <<<"$output")" = "$real" ]
  printf 'not a sum\n' >"$TARGET_OWN_JAR.sha256"
  run manifest_inputs values
  [ "$(jq -r --arg j "$TARGET_OWN_JAR" '.[$j]' <<<"$output")" = "$real" ]
  # A file that is not there is "missing".
  rm "$LT_ROOT/env/sysctls.tsv"
  run manifest_inputs values
  [ "$(jq -r '.["env/sysctls.tsv"]' <<<"$output")" = missing ]
}
