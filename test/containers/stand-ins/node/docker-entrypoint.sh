#!/bin/sh
# As the official node image's entry point: arguments that are not a command run under node.
set -e
if [ "${1#-}" != "$1" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi
exec "$@"
