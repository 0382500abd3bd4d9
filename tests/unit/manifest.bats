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
