#!/usr/bin/env bash
# Builds (or wrappers of one build, e.g. with another environment) side by side on one broker, no slave:
# every round runs every point with each build in turn, fresh store and broker per run, 1 KiB, 128 MiB
# CommitLog files; `mqbench report` gives the medians per point and build.
#
#   BINS="base=bin procs=/tmp/procs/bin" scripts/bench-ab.sh
#   BINS="a=bin b=/tmp/b/bin" POINTS="1 1,4 16" FLUSH="ASYNC_FLUSH SYNC_FLUSH" ROUNDS=5 DURATION=5s scripts/bench-ab.sh
#   RATE=20000 POINTS="4 16" scripts/bench-ab.sh      # open loop: RATE msgs/s offered over the connections
#
# A BINS directory needs only mqbroker (a script that execs the real binary is fine); mqbench is $BIN's.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-bin}
rounds=${ROUNDS:-3}
duration=${DURATION:-5s}
warmup=${WARMUP:-1s}
out=${OUT:-results/ab-$(date +%Y%m%dT%H%M%S)}
store_root=${STORE_DIR:-results/tmp}
read -r -a builds <<<"${BINS:?BINS=\"tag=dir tag=dir\"}"
IFS=, read -r -a points <<<"${POINTS:-1 1,4 16,16 32}"
read -r -a flushes <<<"${FLUSH:-ASYNC_FLUSH}"
source scripts/lib.sh # py, free_ports, wait_port
mkdir -p "$out" "$store_root"
pid=""
stop() { if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""; fi; }
trap stop EXIT
uptime >"$out/loadavg.txt"
for round in $(seq 1 "$rounds"); do
  for flush in "${flushes[@]}"; do
    for pt in "${points[@]}"; do
      read -r conns inflight <<<"$pt"
      for b in "${builds[@]}"; do
        tag=${b%%=*}; dir=${b#*=}
        name="$flush-${conns}x$inflight${RATE:+-r$RATE}-$tag"
        rm -rf "$store_root/ab"
        read -r port ns metrics ha <<<"$(free_ports 4)"
        "$dir/mqbroker" --storePathRootDir="$store_root/ab" --brokerIP1=127.0.0.1 --listenPort="$port" \
          --namesrvListenPort="$ns" --fastListenPort=0 --haListenPort="$ha" --metricsAddr="127.0.0.1:$metrics" \
          --flushDiskType="$flush" --mappedFileSizeCommitLog=134217728 ${BROKER_ARGS:-} >"$out/broker-$name-$round.log" 2>&1 &
        pid=$!
        wait_port "$port"
        "$bin/mqbench" produce --broker "127.0.0.1:$port" --topic ABBench --queues 8 --create-topic \
          --conns "$conns" --inflight "$inflight" --size 1024 --duration "$duration" --warmup "$warmup" \
          ${RATE:+--rate "$RATE"} --metrics "http://127.0.0.1:$metrics/metrics" \
          --name "$name" --out "$out/$name/round-$round" --progress never | tee -a "$out/summary.txt"
        stop
      done
    done
  done
done
uptime >>"$out/loadavg.txt"
"$bin/mqbench" report "$out"/*/ >"$out/report.txt" 2>&1 || true
echo "results: $out"
