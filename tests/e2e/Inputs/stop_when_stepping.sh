#!/bin/sh
# Runs a command, and stops it (SIGSTOP: alive, but making no progress, as a
# hung rank is) once LOG shows a training step, so that the rest of its job
# must notice by its timeout.
#
#   stop_when_stepping.sh LOG COMMAND [ARG...]
log=$1
shift
"$@" &
pid=$!
while ! grep -q '^step' "$log" 2>/dev/null; do
  kill -0 "$pid" 2>/dev/null || exit 1
  sleep 0.1
done
kill -STOP "$pid"
wait "$pid"
