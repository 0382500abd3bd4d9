#!/usr/bin/env bash
# Summary: install a compose client (Debian's docker-compose) when none is present.
# Usage: scripts/setup/install-compose.sh
#
# Only the client: it is enough to check compose/docker-compose.yml
# (docker-compose config) and to drive an engine that runs elsewhere or is
# started by hand. The engine itself (docker.io) is left to the operator.
set -euo pipefail
LT_PROG=install-compose
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

main() {
  if docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null; then
    return 0
  fi
  command -v apt-get >/dev/null || abort "no compose client; install docker compose (plugin) or docker-compose"
  [[ $EUID -eq 0 ]] || abort "no compose client; run as root or: sudo apt-get install docker-compose"
  say "installing docker-compose with apt-get"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose >&2 \
    || abort "apt-get install docker-compose failed"
}

main "$@"
