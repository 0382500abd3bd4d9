#!/usr/bin/env bash
# Summary: build the pinned k6 into .tools/bin (skipped when it is already there).
# Usage: scripts/setup/install-k6.sh
set -euo pipefail
LT_PROG=install-k6
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

readonly K6_MODULE="go.k6.io/k6"
readonly K6_VERSION="${K6_VERSION:-v1.8.1}"

main() {
  local bin="$LT_ROOT/.tools/bin/k6"
  if [[ -x "$bin" ]] && "$bin" version 2>/dev/null | grep -q "${K6_VERSION}"; then
    return 0
  fi
  "$LT_ROOT/scripts/setup/require.sh" go
  say "building k6 $K6_VERSION with go install (a few minutes the first time)"
  mkdir -p "$LT_ROOT/.tools/bin"
  GOPROXY="$(go_proxy_without_direct)" GOBIN="$LT_ROOT/.tools/bin" GOFLAGS=-buildvcs=false \
    go install "$K6_MODULE@$K6_VERSION" || abort "go install $K6_MODULE@$K6_VERSION failed"
  "$bin" version >&2
}


main "$@"
