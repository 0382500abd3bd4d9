#!/usr/bin/env bash
# Summary: build the pinned k6 into .tools/bin (skipped when it is already there).
# Usage: scripts/setup/install-k6.sh
#   K6_VERSION=v1.8.1  another release (k6 v2 and later live at go.k6.io/k6/vN)
#   LT_K6=/path/to/k6  where to put it (default .tools/bin/k6; the suite runs the same LT_K6)
set -euo pipefail
LT_PROG=install-k6
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

readonly K6_VERSION="${K6_VERSION:-v2.2.0}"

# k6_module VERSION: the Go module of that k6 release: go.k6.io/k6 up to
# v1, go.k6.io/k6/vN from v2 on (Go's major version suffix, k6 v2.0.0's
# release notes).
k6_module() {
  local version="$1" major
  [[ "$version" =~ ^v([0-9]+)\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] \
    || usage_error "K6_VERSION=$version: not a k6 release such as v1.8.1 or v2.2.0"
  major="${BASH_REMATCH[1]}"
  if ((major < 2)); then
    printf 'go.k6.io/k6\n'
  else
    printf 'go.k6.io/k6/v%d\n' "$major"
  fi
}

# k6_build MODULE VERSION BIN: build MODULE@VERSION into BIN, as `go install`
# would, from a module of its own in a temporary directory: `go install
# module@version` also reads the module's version list (for deprecation
# notices), which a proxy that serves only exact versions answers with 404.
k6_build() {
  local module="$1" version="$2" bin="$3" dir proxy status=0
  proxy="$(go_proxy_without_direct)"
  dir="$(mktemp -d)"
  # (set -e does not hold left of ||: each step is chained.)
  (
    cd "$dir" \
      && export GOPROXY="$proxy" GOFLAGS=-buildvcs=false \
      && go mod init k6-build >/dev/null 2>&1 \
      && { go get "$module@$version" 2>"$dir/get.log" || { cat "$dir/get.log" >&2; exit 1; }; } \
      && go build -o "$bin.new" "$module"
  ) || status=$?
  rm -rf "$dir"
  [[ $status -eq 0 ]] || { rm -f "$bin.new"; abort "building $module@$version failed"; }
  mv -f "$bin.new" "$bin"
}

main() {
  local bin="${LT_K6:-$LT_ROOT/.tools/bin/k6}" module
  module="$(k6_module "$K6_VERSION")"
  if [[ -x "$bin" ]] && "$bin" version 2>/dev/null | grep -qF "k6 $K6_VERSION "; then
    return 0
  fi
  "$LT_ROOT/scripts/setup/require.sh" go
  say "building k6 $K6_VERSION ($module) into $bin (a few minutes the first time)"
  mkdir -p "$(dirname "$bin")"
  k6_build "$module" "$K6_VERSION" "$bin"
  "$bin" version >&2
}

main "$@"
