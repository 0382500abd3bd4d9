#!/usr/bin/env bash
# Summary: build the pinned InfluxDB 1.8 server (influxd) into .tools/bin (skipped when it is there).
# Usage: scripts/setup/install-influxd.sh
#
# InfluxDB 1.8 is pure Go, so go install builds it like k6 (about 2.5 min
# cold). Debian's influxdb package is 1.6; the suite pins the 1.8 the
# Compose stack runs.
set -euo pipefail
LT_PROG=install-influxd
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

readonly INFLUXD_PACKAGE="github.com/influxdata/influxdb/cmd/influxd"
readonly INFLUXD_MODULE="github.com/influxdata/influxdb"
readonly INFLUXD_VERSION="${INFLUXD_VERSION:-v1.8.10}"

main() {
  local bin="$LT_ROOT/.tools/bin/influxd"
  if influxd_is_pinned "$bin"; then
    return 0
  fi
  "$LT_ROOT/scripts/setup/require.sh" go
  say "building influxd $INFLUXD_VERSION with go install (a few minutes the first time)"
  mkdir -p "$LT_ROOT/.tools/bin"
  GOPROXY="$(go_proxy_without_direct)" GOBIN="$LT_ROOT/.tools/bin" GOFLAGS=-buildvcs=false \
    go install "$INFLUXD_PACKAGE@$INFLUXD_VERSION" || abort "go install $INFLUXD_PACKAGE@$INFLUXD_VERSION failed"
  influxd_is_pinned "$bin" || abort "$bin is not $INFLUXD_MODULE $INFLUXD_VERSION after the build"
}

# influxd_is_pinned BIN: succeed if BIN exists and was built from the pinned
# module version. A go-installed influxd reports "vunknown" itself, so the
# module version comes from the build information Go embeds in the binary;
# without Go at hand, an existing binary is trusted.
influxd_is_pinned() {
  local bin="$1"
  [[ -x "$bin" ]] || return 1
  command -v go >/dev/null || return 0
  go version -m "$bin" 2>/dev/null | awk -v m="$INFLUXD_MODULE" -v v="$INFLUXD_VERSION" '
    $1 == "mod" && $2 == m && $3 == v { found = 1 } END { exit !found }'
}


main "$@"
