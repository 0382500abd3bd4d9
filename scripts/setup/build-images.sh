#!/usr/bin/env bash
# Summary: build the target image of the compose backend without a registry (skipped when it is up to date).
# Usage: scripts/setup/build-images.sh [--force] [--jar APP.jar]
#
# 1. The base image: Debian (debootstrap, minbase) with a Java 17 runtime,
#    curl and iproute2, imported into the engine with `docker import`. Only
#    Debian's package mirror is needed (the one apt is configured with, or
#    DEBIAN_MIRROR). Skipped when an image of the same recipe exists.
# 2. The target image (TARGET_IMAGE, env/defaults.env) from server/Dockerfile
#    with that base as its BASE_IMAGE build argument; it copies the jar that
#    `make tools` builds. Skipped when the image holds this very jar.
# --jar APP.jar builds the image of any Spring Boot jar instead (TARGET_JAR
#    with BACKEND=compose): compose/app/Dockerfile on the same base, named
#    after the jar's checksum (compose_jar_image: ltsuite/app-<sha>:local).
# TARGET_BASE_IMAGE=IMAGE skips step 1 and builds on IMAGE instead (for
# example eclipse-temurin:17-jre where a registry is reachable).
# --force rebuilds both.
set -euo pipefail
LT_PROG=build-images
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=scripts/lib/envfile.sh
source "$LT_ROOT/scripts/lib/envfile.sh"
# shellcheck source=scripts/lib/matrix.sh
source "$LT_ROOT/scripts/lib/matrix.sh"
# shellcheck source=scripts/lib/compose.sh
source "$LT_ROOT/scripts/lib/compose.sh"

readonly BASE_SUITE=bookworm
readonly BASE_PACKAGES=openjdk-17-jre-headless,curl,iproute2
readonly BASE_IMAGE_NAME="ltsuite/debian-jre17:$BASE_SUITE"
# Changes whenever what goes into the base changes, so a stale base is rebuilt.
readonly BASE_RECIPE="debootstrap minbase $BASE_SUITE + $BASE_PACKAGES, trimmed, v2"
readonly WORK_PARENT="$LT_ROOT/.data/images"
# The jar the image holds: the suite's own target, or --jar's.
JAR="$LT_ROOT/server/target/loadtest-target.jar"
WORK_DIR=""

main() {
  local force=0 base target context="$LT_ROOT/server" own=1
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --force) force=1 ;;
      --jar)
        [[ $# -ge 2 && -n "$2" ]] || usage_error "--jar needs the path of a jar"
        [[ -f "$2" ]] || usage_error "--jar: no such file: $2"
        JAR="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
        own=0
        shift
        ;;
      -h | --help)
        print_summary "${BASH_SOURCE[0]}"
        return 0
        ;;
      *) usage_error "unknown option '$1' (--force, --jar APP.jar)" ;;
    esac
    shift
  done
  knobs_load "$LT_ROOT/env/defaults.env"
  target="${TARGET_IMAGE:-${KNOB_DEFAULT[TARGET_IMAGE]}}"
  ((own)) || target="$(compose_jar_image "$JAR")"
  [[ -f "$JAR" ]] || abort "no target jar at ${JAR#"$LT_ROOT"/}; build it first: make tools"
  docker_engine_answers || abort "no Docker engine answers; start one: scripts/setup/install-docker.sh start"

  base="${TARGET_BASE_IMAGE:-}"
  if [[ -z "$base" ]]; then
    base="$BASE_IMAGE_NAME"
    if ((force)) || [[ "$(image_label "$base" ltsuite.recipe)" != "$BASE_RECIPE" ]]; then
      build_base_image "$base"
    fi
  fi
  if ((force)) || ! target_is_current "$target" "$base"; then
    if ((!own)); then
      make_app_context
      context="$WORK_DIR"
    fi
    build_target_image "$target" "$base" "$context"
    remove_work_dir
    trap - EXIT
  fi
  say "images ready: $target (on $base)"
}

# image_label IMAGE LABEL: the value of LABEL on IMAGE; empty if either is missing.
image_label() {
  docker image inspect --format "{{ index .Config.Labels \"$2\" }}" "$1" 2>/dev/null || true
}

# image_id IMAGE: the image's id; empty if it is missing.
image_id() {
  docker image inspect --format '{{.Id}}' "$1" 2>/dev/null || true
}

# target_is_current IMAGE BASE: succeed if IMAGE was built from this jar on BASE as it is now.
target_is_current() {
  local image="$1" base="$2"
  [[ -n "$(image_id "$image")" ]] || return 1
  [[ "$(image_label "$image" ltsuite.jar_sha256)" == "$(sha256sum "$JAR" | cut -d' ' -f1)" ]] || return 1
  [[ "$(image_label "$image" ltsuite.base_id)" == "$(image_id "$base")" ]]
}

# make_app_context: the build context of a jar of one's own: a folder of
# its own (WORK_DIR) with compose/app/Dockerfile and the jar as app.jar.
make_app_context() {
  mkdir -p "$WORK_PARENT"
  WORK_DIR="$(mktemp -d "$WORK_PARENT/app.XXXXXX")"
  trap remove_work_dir EXIT
  cp "$LT_ROOT/compose/app/Dockerfile" "$WORK_DIR/Dockerfile"
  cp "$JAR" "$WORK_DIR/app.jar"
}

# build_target_image IMAGE BASE CONTEXT: the Dockerfile in CONTEXT (server/,
# which holds the suite's own jar, or make_app_context's folder) on BASE,
# labelled with what it was built from. The classic builder takes a local
# base image as it is; it needs no registry for an image the engine already
# has.
build_target_image() {
  local image="$1" base="$2" context="$3" started=$SECONDS old_id
  old_id="$(image_id "$image")"
  say "building $image from ${context#"$LT_ROOT"/}/Dockerfile on $base (jar ${JAR#"$LT_ROOT"/})"
  DOCKER_BUILDKIT=0 docker build --quiet \
    --build-arg "BASE_IMAGE=$base" \
    --label "ltsuite.jar_sha256=$(sha256sum "$JAR" | cut -d' ' -f1)" \
    --label "ltsuite.jar=$(basename "$JAR")" \
    --label "ltsuite.base_id=$(image_id "$base")" \
    --tag "$image" "$context" >/dev/null \
    || abort "docker build of $image failed"
  remove_replaced_image "$old_id" "$image"
  say "built $image in $((SECONDS - started))s"
}

# build_base_image IMAGE: debootstrap a minimal Debian with a JRE into a
# folder under .data/images/, trim what a server never reads, import it.
build_base_image() {
  local image="$1" mirror started=$SECONDS rootfs old_id
  old_id="$(image_id "$image")"
  [[ $EUID -eq 0 ]] || abort "building the base image needs root (debootstrap); run as root"
  install_debootstrap
  mirror="$(debian_mirror)"
  mkdir -p "$WORK_PARENT"
  WORK_DIR="$(mktemp -d "$WORK_PARENT/rootfs.XXXXXX")"
  trap remove_work_dir EXIT
  rootfs="$WORK_DIR/rootfs"
  say "debootstrap $BASE_SUITE with $BASE_PACKAGES from $mirror (a few minutes; log in ${WORK_PARENT#"$LT_ROOT"/}/debootstrap.log)"
  if ! debootstrap --variant=minbase --include="$BASE_PACKAGES" \
    "$BASE_SUITE" "$rootfs" "$mirror" >"$WORK_PARENT/debootstrap.log" 2>&1; then
    abort "debootstrap failed: $(tail -n 2 "$WORK_PARENT/debootstrap.log" | tr '\n' ' ' | cut -c1-300)"
  fi
  unmount_below "$rootfs"
  trim_rootfs "$rootfs"
  say "importing $(du -sh "$rootfs" | cut -f1) as $image"
  tar --numeric-owner -C "$rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64' \
    --change "LABEL ltsuite.recipe=\"$BASE_RECIPE\"" \
    --change 'CMD ["/bin/bash"]' \
    - "$image" >/dev/null || abort "docker import of $image failed"
  remove_replaced_image "$old_id" "$image"
  remove_work_dir
  trap - EXIT
  say "built $image in $((SECONDS - started))s"
}

# remove_replaced_image OLD_ID IMAGE: the image IMAGE named before a rebuild,
# now nameless, with its layers (the vfs driver stores every layer as a full
# copy). Kept if a container or another image still uses it.
remove_replaced_image() {
  local old_id="$1" image="$2"
  [[ -n "$old_id" && "$old_id" != "$(image_id "$image")" ]] || return 0
  docker rmi "$old_id" >/dev/null 2>&1 || true
}

# install_debootstrap: Debian's debootstrap, when it is missing.
install_debootstrap() {
  command -v debootstrap >/dev/null && return 0
  command -v apt-get >/dev/null || abort "debootstrap is missing; install it, or set TARGET_BASE_IMAGE to an image with Java 17"
  say "installing debootstrap with apt-get"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >&2 \
    || abort "apt-get install debootstrap failed"
}

# debian_mirror: DEBIAN_MIRROR, or the Debian archive apt is configured with
# (the URI that serves this release's main component).
# shellcheck disable=SC2016 # SC2016: jq and awk programs are in single quotes on purpose: their $names are theirs
debian_mirror() {
  local mirror="${DEBIAN_MIRROR:-}" codename
  if [[ -z "$mirror" ]]; then
    codename="$(. /etc/os-release 2>/dev/null && printf '%s' "${VERSION_CODENAME:-}")"
    mirror="$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT) $(IDENTIFIER)' 2>/dev/null \
      | awk -v release="${codename:-$BASE_SUITE}" '$2 == release && $3 == "main" && $4 == "Packages" { print $1; exit }')"
  fi
  [[ -n "$mirror" ]] || abort "cannot tell which Debian mirror apt uses; set DEBIAN_MIRROR=<archive URL>"
  printf '%s\n' "${mirror%/}"
}

# trim_rootfs DIR: drop package caches, documentation and locales (the
# storage driver copies the whole tree for every container), and the build
# host's resolv.conf and hostname (the engine provides its own).
trim_rootfs() {
  local dir="$1"
  rm -f "${dir:?}"/etc/resolv.conf "${dir:?}"/etc/hostname
  rm -rf "${dir:?}"/var/cache/apt/archives/*.deb "${dir:?}"/var/lib/apt/lists/* \
    "${dir:?}"/usr/share/doc/* "${dir:?}"/usr/share/man/* "${dir:?}"/usr/share/info/* \
    "${dir:?}"/usr/share/locale/* "${dir:?}"/var/log/*.log "${dir:?}"/var/cache/debconf/*-old
}

# unmount_below DIR: unmount whatever debootstrap left mounted inside DIR
# (deepest first), so that removing DIR can never reach into /proc or /dev.
unmount_below() {
  local dir="$1" mount_point
  while read -r mount_point; do
    umount -l "$mount_point" 2>/dev/null || true
  done < <(awk -v d="$dir/" 'index($2 "/", d) == 1 { print $2 }' /proc/mounts | sort -r)
}

# remove_work_dir: the debootstrap folder, never across a mount point.
remove_work_dir() {
  [[ -n "$WORK_DIR" && -d "$WORK_DIR" ]] || return 0
  unmount_below "$WORK_DIR"
  rm -rf --one-file-system "$WORK_DIR"
  WORK_DIR=""
}

main "$@"
