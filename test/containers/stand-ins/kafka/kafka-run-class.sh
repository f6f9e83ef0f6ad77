#!/usr/bin/env bash
# STAND-IN for the Kafka distribution's kafka-run-class.sh: runs one class of /opt/kafka/libs.
# The broker gets the distribution's heap default (1 GiB); a tool gets a small heap and a JIT
# that starts fast, so that the compose healthcheck's tool run every 5 s stays cheap.
set -eu
class="$1"
if [ "$class" = kafka.Kafka ]; then
  heap="${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G}"
  perf="${KAFKA_JVM_PERFORMANCE_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true}"
  log="-Dorg.slf4j.simpleLogger.defaultLogLevel=${KAFKA_LOG4J_ROOT_LOGLEVEL:-info}"
else
  heap="${KAFKA_HEAP_OPTS:--Xmx256M}"
  perf="${KAFKA_JVM_PERFORMANCE_OPTS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true}"
  log="-Dorg.slf4j.simpleLogger.defaultLogLevel=${KAFKA_TOOLS_LOG4J_LOGLEVEL:-warn}"
fi
# shellcheck disable=SC2086 # the *_OPTS variables are word lists, as in the distribution's script
exec java $heap $perf ${KAFKA_OPTS:-} "$log" -Dorg.slf4j.simpleLogger.showDateTime=true -cp '/opt/kafka/libs/*' "$@"
