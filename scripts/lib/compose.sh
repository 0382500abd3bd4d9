# shellcheck shell=bash
# Summary: the Docker engine and the compose client, as the scripts find them.

COMPOSE=()

# docker_engine_answers: succeed if a Docker engine answers (not just a client).
docker_engine_answers() {
  command -v docker >/dev/null && timeout 10 docker info >/dev/null 2>&1
}

# compose_find: set COMPOSE to the compose command (plugin first, then
# Debian's docker-compose); fail if there is none.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
compose_find() {
  if docker compose version >/dev/null 2>&1; then
    COMPOSE=(docker compose)
  elif command -v docker-compose >/dev/null; then
    COMPOSE=(docker-compose)
  else
    return 1
  fi
}

# compose_jar_image JAR: the name of the image BACKEND=compose runs a jar of
# one's own (TARGET_JAR) in, after the jar's checksum, so a rebuilt jar gets
# an image of its own (scripts/setup/build-images.sh --jar builds it).
compose_jar_image() {
  local sum
  sum="$(sha256sum "$1" | cut -d' ' -f1)"
  printf 'ltsuite/app-%s:local\n' "${sum:0:12}"
}
