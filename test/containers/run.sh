#!/usr/bin/env bash
# The container tests (`npm run test:containers`; .ci/run calls it after `npm test`):
#   1. builds the stand-in images (build-stand-ins.sh; cached) where no registry is reachable;
#   2. starts podman's Docker-compatible API on a private socket (DOCKER_HOST);
#   3. runs the project's docker-compose.yml and Dockerfile with Compose v1 (Debian's
#      docker-compose) on it: test/containers/compose-stack.container-test.ts;
#   4. runs two integration test files on a testcontainers Kafka (HOOKSTREAM_TEST_CONTAINERS=1).
# Where the engine cannot run containers here (no podman, the API does not start, a container
# cannot start, no Debian base can be built), it says so and skips: exit 0 with the reason.
# Where the engine works, every failure fails.
# Everything it starts (the API process, containers, networks, volumes) it removes at the end.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
PROJECT=hookstream-containers-test
started=$SECONDS
service_pid=""
sockdir=""

say() { printf '[containers] %s\n' "$*"; }
cleanup() {
  # Whatever a test left behind if it died before its own cleanup: only what these tests label.
  if command -v podman >/dev/null 2>&1; then
    for label in "com.docker.compose.project=$PROJECT" "org.testcontainers=true"; do
      ids="$(podman ps -aq --filter "label=$label" 2>/dev/null)"
      [[ -z "$ids" ]] || podman rm -f -v $ids >/dev/null 2>&1 || true
    done
    podman volume rm -f "${PROJECT}_kafka-data" >/dev/null 2>&1 || true
    podman network rm -f "${PROJECT}_default" >/dev/null 2>&1 || true
  fi
  if [[ -n "$service_pid" ]]; then kill "$service_pid" 2>/dev/null; wait "$service_pid" 2>/dev/null; fi
  [[ -z "$sockdir" ]] || rm -rf "$sockdir"
}
trap cleanup EXIT

# The compose test prints the reason and skips; the testcontainers run is left out.
skip() {
  say "SKIPPED: $*"
  export HOOKSTREAM_CONTAINERS_SKIP_REASON="$*"
  npx jest --config test/containers/jest.config.js
  exit $?
}

command -v podman >/dev/null 2>&1 || skip "podman is not installed (apt-get install podman runc)"
for cmd in docker-compose debootstrap; do
  command -v "$cmd" >/dev/null 2>&1 || skip "$cmd is not installed"
done
podman info >/dev/null 2>"/tmp/hookstream-podman-info.$$" \
  || skip "podman cannot run here: $(tail -3 "/tmp/hookstream-podman-info.$$"; rm -f "/tmp/hookstream-podman-info.$$")"
rm -f "/tmp/hookstream-podman-info.$$"

# 1. The images. A failure with an engine that runs containers is a failure; without one, a skip.
base=localhost/hookstream-stand-in/debian:bookworm
engine_runs() {
  local out
  out="$(podman run --rm "$base" true 2>&1)" || skip "podman cannot start a container here: $out"
}
t=$SECONDS
if ! bash "$here/build-stand-ins.sh"; then
  podman image exists "$base" || skip "no Debian base image could be built (debootstrap failed; see above)"
  engine_runs
  say "FAILED: building the stand-in images (the engine runs containers)"
  exit 1
fi
engine_runs
say "images ready in $((SECONDS - t)) s"

# 2. podman's Docker-compatible API, for compose and testcontainers.
sockdir="$(mktemp -d /tmp/hookstream-podman.XXXXXX)"
podman system service --time=0 "unix://$sockdir/podman.sock" > "$sockdir/service.log" 2>&1 &
service_pid=$!
export DOCKER_HOST="unix://$sockdir/podman.sock"
for _ in $(seq 1 40); do
  node -e "require('node:http').get({ socketPath: '$sockdir/podman.sock', path: '/_ping' },
    (r) => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1))" 2>/dev/null && break
  sleep 0.5
done
node -e "require('node:http').get({ socketPath: '$sockdir/podman.sock', path: '/_ping' },
  (r) => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1))" 2>/dev/null \
  || skip "podman system service did not answer on $DOCKER_HOST: $(tail -3 "$sockdir/service.log")"
say "podman $(podman version --format '{{.Server.Version}}') API on $DOCKER_HOST"
say "compose client: docker-compose $(docker-compose version --short)"

status=0
# 3. docker-compose.yml and the Dockerfile.
t=$SECONDS
npx jest --config test/containers/jest.config.js || status=1
say "compose stack tests: $((SECONDS - t)) s"

# 4. The testcontainers path of test/support/global-setup.ts. Ryuk (testcontainers' reaper)
# is an image of its own that cannot be pulled here; global teardown stops the container. On
# this machine testcontainers would take the podman network's gateway for the host (it finds
# /.dockerenv): the published port is on loopback.
t=$SECONDS
HOOKSTREAM_TEST_CONTAINERS=1 TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1 \
  npx jest test/readme-walkthrough.test.ts test/tasks/tasks.test.ts || status=1
say "testcontainers run: $((SECONDS - t)) s"

say "done in $((SECONDS - started)) s: $([[ $status -eq 0 ]] && echo passed || echo FAILED)"
exit $status
