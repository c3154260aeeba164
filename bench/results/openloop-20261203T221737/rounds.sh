#!/usr/bin/env bash
# Interleaved rounds: old (main 4d59192) vs new (wt-openloop) mqbench, open loop 20k msgs/s over 4 connections
# (256 in flight each), and the closed loop 4 × 16 for reference; 1 KiB, 8 s after 2 s warm-up; a fresh
# bin/mqbroker (main's) per run on 127.0.0.1 with a temp store and 128 MiB CommitLog files (run.sh).
set -uo pipefail
out=$1 rounds=${2:-3}
here=$(dirname "$0")
# OLD: go build -o /tmp/ol-base/bin/mqbench ./cmd/mqbench (and mqbroker) at main 4d59192; NEW: the same at wt-openloop.
OLD=/tmp/ol-base/bin/mqbench NEW=/tmp/ol-new/bin/mqbench
open="--conns 4 --inflight 256 --rate 20000 --duration 8s --warmup 2s"
closed="--conns 4 --inflight 16 --duration 8s --warmup 2s"
{ echo "started $(date -u +%FT%TZ); nproc $(nproc); $(uname -r); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"; } >"$out/machine.txt"
for r in $(seq 1 "$rounds"); do
  for v in old-open new-open old-closed new-closed; do
    case $v in
      old-open) bin=$OLD flags=$open ;; new-open) bin=$NEW flags=$open ;;
      old-closed) bin=$OLD flags=$closed ;; new-closed) bin=$NEW flags=$closed ;;
    esac
    printf '%s round %d: ' "$v" "$r"
    "$here/run.sh" "$out" "$v/round-$r" "$bin" $flags
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
