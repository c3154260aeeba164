#!/usr/bin/env bash
# Message size × connection count matrix, gnet vs std, against bin/mqbroker on loopback
# (ASYNC_FLUSH, mmap'ed CommitLog). Complements `make bench-report`, which sweeps broker
# configurations at one load: this sweeps the load at one configuration.
#
# Rounds are interleaved (every round runs every engine and point once); `mqbench report`
# groups the rounds of a point by name and reports medians.
#
#   scripts/bench-matrix.sh                      # 3 rounds of 5 s runs, ~5 minutes
#   ROUNDS=1 DURATION=2s scripts/bench-matrix.sh # a quick look
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-bin}
rounds=${ROUNDS:-3}
duration=${DURATION:-5s}
warmup=${WARMUP:-1s}
out=${OUT:-results/matrix-$(date +%Y%m%dT%H%M%S)}
store_root=${STORE_DIR:-results/tmp}
# size conns inflight
points=("128 4 16" "1024 4 16" "16384 4 16" "1024 1 1" "1024 64 4" "1024 1000 1")

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

mkdir -p "$out" "$store_root"
broker_pid=""
stop_broker() {
  if [ -n "$broker_pid" ]; then kill -TERM "$broker_pid" 2>/dev/null || true; wait "$broker_pid" 2>/dev/null || true; fi
  broker_pid=""
}
trap stop_broker EXIT

for round in $(seq 1 "$rounds"); do
  for engine in gnet std; do
    store="$store_root/matrix-$engine-$round"
    rm -rf "$store"
    port=$(free_port); nsport=$(free_port); metrics=$(free_port)
    "$bin/mqbroker" --storePathRootDir="$store" --brokerIP1=127.0.0.1 --listenPort="$port" \
      --namesrvListenPort="$nsport" --haListenPort="$(free_port)" --fastListenPort=0 --metricsAddr="127.0.0.1:$metrics" --netEngine="$engine" \
      --mappedFileSizeCommitLog=268435456 --flushDiskType=ASYNC_FLUSH --maxConnections=5000 \
      >"$out/broker-$engine-$round.log" 2>&1 &
    broker_pid=$!
    for _ in $(seq 1 100); do
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
      sleep 0.1
    done
    for p in "${points[@]}"; do
      read -r size conns inflight <<<"$p"
      name="$engine-${size}B-${conns}x${inflight}"
      "$bin/mqbench" produce --broker "127.0.0.1:$port" --topic "Matrix${size}" --queues 8 --create-topic \
        --conns "$conns" --inflight "$inflight" --size "$size" --duration "$duration" --warmup "$warmup" \
        --metrics "127.0.0.1:$metrics" --name "$name" --out "$out/$name/round-$round" --progress never | tail -n 1
    done
    stop_broker
    rm -rf "$store"
  done
done
"$bin/mqbench" report "$out" --md "$out/report.md" --html "$out/report.html" --title "size x connections, gnet vs std"
echo "wrote $out/report.md and $out/report.html"
