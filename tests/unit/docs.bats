#!/usr/bin/env bats
# The README and docs/*.md: every relative link reaches a file of the
# repository, and the README stays a front door (at most 260 lines).

setup() {
  load '../test_helper'
}

# docs_link_targets FILE: the target of every Markdown link and image in FILE,
# one per line, as written (anchor included), outside fenced code blocks.
docs_link_targets() {
  awk '
    /^[[:space:]]*```/ { fenced = !fenced; next }
    fenced { next }
    {
      line = $0
      while (match(line, /\]\([^) ]+\)/)) {
        print substr(line, RSTART + 2, RLENGTH - 3)
        line = substr(line, RSTART + RLENGTH)
      }
    }
  ' "$1"
}

# docs_broken_links FILE: "FILE: TARGET" for every relative link in FILE whose
# file (the part before any #anchor, taken from FILE's own directory) is missing.
docs_broken_links() {
  local file="$1" target path
  while IFS= read -r target; do
    case "$target" in
      http://* | https://* | mailto:* | '#'*) continue ;;
    esac
    path="${target%%#*}"
    [[ -e "$(dirname "$file")/$path" ]] || printf '%s: %s\n' "${file#"$LT_ROOT"/}" "$target"
  done < <(docs_link_targets "$file")
}

@test "the link reader finds links and images, skips fenced code, keeps anchors" {
  lt_write "$BATS_TEST_TMPDIR/page.md" <<'EOF'
See [the seeds](docs/seeds.md#seed-003) and ![a chart](docs/a.png), [web](https://example.org).
```sh
echo "[not a link](nowhere.md)"
```
Two on a line: [a](a.md) then [b](../b.md).
EOF
  run docs_link_targets "$BATS_TEST_TMPDIR/page.md"
  assert_success
  assert_output "docs/seeds.md#seed-003
docs/a.png
https://example.org
a.md
../b.md"
}

@test "a link to a missing file is reported with the page that has it" {
  mkdir -p "$BATS_TEST_TMPDIR/docs"
  touch "$BATS_TEST_TMPDIR/here.md"
  lt_write "$BATS_TEST_TMPDIR/docs/page.md" <<'EOF'
[ok](../here.md#top) [gone](gone.md) [web](https://example.org) [anchor](#top)
EOF
  LT_ROOT="$BATS_TEST_TMPDIR" run docs_broken_links "$BATS_TEST_TMPDIR/docs/page.md"
  assert_success
  assert_output "docs/page.md: gone.md"
}

@test "every relative link in README.md and docs/*.md points to an existing file" {
  local page
  local -a broken=()
  for page in "$LT_ROOT/README.md" "$LT_ROOT"/docs/*.md; do
    mapfile -t -O "${#broken[@]}" broken < <(docs_broken_links "$page")
  done
  [[ ${#broken[@]} -eq 0 ]] || fail "broken links:$(printf '\n  %s' "${broken[@]}")"
}

@test "README.md is a front door: at most 260 lines" {
  local lines
  lines="$(wc -l <"$LT_ROOT/README.md")"
  [[ $lines -le 260 ]] || fail "README.md has $lines lines; move the detail to docs/"
}
