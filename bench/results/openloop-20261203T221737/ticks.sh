#!/usr/bin/env bash
# The tick's trade-off: new mqbench open loop at --tick 200us (default), 500us, 1ms, and old, interleaved.
set -uo pipefail
out=$1 rounds=${2:-2}
here=$(dirname "$0")
open="--conns 4 --inflight 256 --rate 20000 --duration 8s --warmup 2s"
for r in $(seq 1 "$rounds"); do
  for v in tick-200us tick-500us tick-1ms old-open-t; do
    bin=/tmp/ol-new/bin/mqbench; flags="$open --tick ${v#tick-}"
    [ $v = old-open-t ] && { bin=/tmp/ol-base/bin/mqbench; flags=$open; }
    printf '%s round %d: ' "$v" "$r"
    "$here/run.sh" "$out" "$v/round-$r" "$bin" $flags
  done
done
