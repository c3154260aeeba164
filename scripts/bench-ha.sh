#!/usr/bin/env bash
# Replication benchmarks (issue 16): a master and a slave of bin/mqbroker on loopback, 1 KiB messages.
#  1. ASYNC_MASTER vs SYNC_MASTER, each under ASYNC_FLUSH and SYNC_FLUSH, at 1×1, 4×16 and 16×32
#     (connections × requests in flight), closed loop, interleaved rounds (every round runs every
#     configuration once; mqbench report gives medians).
#  2. Replication lag (bytes) sampled from both brokers' /metrics every 100 ms during ASYNC_MASTER 4×16.
#  3. Catch-up: a slave stopped while CATCHUP_BYTES are written, then started again: bytes/s until its
#     CommitLog end equals the master's.
#
#   scripts/bench-ha.sh                         # 3 rounds of 5 s runs, 2 GiB catch-up
#   ROUNDS=1 DURATION=2s CATCHUP_BYTES=268435456 scripts/bench-ha.sh   # a quick look
#   CONFIGS="SYNC_MASTER SYNC_FLUSH" POINTS="4 16" CATCHUP_BYTES=0 scripts/bench-ha.sh   # one point
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-bin}
rounds=${ROUNDS:-3}
duration=${DURATION:-5s}
warmup=${WARMUP:-1s}
catchup=${CATCHUP_BYTES:-2147483648}
out=${OUT:-bench/results/ha-$(date +%Y%m%dT%H%M%S)}
store_root=${STORE_DIR:-bench/results/tmp}
IFS=, read -r -a configs <<<"${CONFIGS:-ASYNC_MASTER ASYNC_FLUSH,SYNC_MASTER ASYNC_FLUSH,ASYNC_MASTER SYNC_FLUSH,SYNC_MASTER SYNC_FLUSH}"
IFS=, read -r -a points <<<"${POINTS:-1 1,4 16,16 32}"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }
max_offset() { curl -s "http://127.0.0.1:$1/metrics" | awk '/^ringmq_store_commitlog_max_offset_bytes /{printf "%.0f\n", $2}'; }

mkdir -p "$out" "$store_root"
pids=()
stop_all() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap stop_all EXIT

# start_master ROLE FLUSH STORE → sets mport mmetrics mha
start_master() {
  mport=$(free_port); mha=$(free_port); mmetrics=$(free_port); local ns; ns=$(free_port)
  "$bin/mqbroker" --storePathRootDir="$3" --brokerIP1=127.0.0.1 --listenPort="$mport" --haListenPort="$mha" \
    --namesrvListenPort="$ns" --metricsAddr="127.0.0.1:$mmetrics" --brokerRole="$1" --flushDiskType="$2" --fastListenPort=0 \
    --mappedFileSizeCommitLog=268435456 ${HA_BATCH:+--haTransferBatchSize=$HA_BATCH} >"$out/master-$logtag.log" 2>&1 &
  pids+=($!)
  wait_port "$mport"
}
# start_slave FLUSH STORE → sets smetrics
start_slave() {
  local port; port=$(free_port); smetrics=$(free_port)
  "$bin/mqbroker" --storePathRootDir="$2" --brokerIP1=127.0.0.1 --listenPort="$port" --haListenPort="$(free_port)" \
    --namesrvEmbedded=false --fastListenPort=0 --metricsAddr="127.0.0.1:$smetrics" --brokerRole=SLAVE --brokerId=1 \
    --haMasterAddress="127.0.0.1:$mha" --flushDiskType="$1" --mappedFileSizeCommitLog=268435456 >"$out/slave-$logtag.log" 2>&1 &
  slave_pid=$!
  pids+=($slave_pid)
  wait_port "$port"
  for _ in $(seq 1 200); do grep -q "ha: slave connected" "$out/master-$logtag.log" 2>/dev/null && return 0; sleep 0.05; done
}

for round in $(seq 1 "$rounds"); do
  for c in "${configs[@]}"; do
    read -r role flush <<<"$c"
    logtag="$role-$flush-$round"
    rm -rf "$store_root/ha-m" "$store_root/ha-s"
    start_master "$role" "$flush" "$store_root/ha-m"
    start_slave "$flush" "$store_root/ha-s"
    for p in "${points[@]}"; do
      read -r conns inflight <<<"$p"
      name="$role-$flush-${conns}x${inflight}"
      lagfile=""
      if [ "$role $flush $conns" = "ASYNC_MASTER ASYNC_FLUSH 4" ]; then
        lagfile="$out/lag-round-$round.txt"
        ( while sleep 0.1; do s=$(max_offset "$smetrics"); m=$(max_offset "$mmetrics"); [ -n "$m" ] && [ -n "$s" ] && echo $((m - s)); done ) >"$lagfile" &
        lag_pid=$!
      fi
      "$bin/mqbench" produce --broker "127.0.0.1:$mport" --topic HABench --queues 8 --create-topic \
        --conns "$conns" --inflight "$inflight" --size 1024 --duration "$duration" --warmup "$warmup" \
        --name "$name" --out "$out/$name/round-$round" --progress never | tail -n 1
      if [ -n "$lagfile" ]; then kill "$lag_pid" 2>/dev/null || true; wait "$lag_pid" 2>/dev/null || true; fi
    done
    stop_all
  done
done
rm -rf "$store_root/ha-m" "$store_root/ha-s"

if [ "$catchup" -le 0 ]; then
  "$bin/mqbench" report "$out" --md "$out/report.md" --html "$out/report.html" --title "ASYNC_MASTER vs SYNC_MASTER, 1 KiB"
  exit 0
fi
# Catch-up: the slave follows a little, stops, CATCHUP_BYTES are written, the slave starts again.
logtag=catchup
start_master ASYNC_MASTER ASYNC_FLUSH "$store_root/ha-m"
start_slave ASYNC_FLUSH "$store_root/ha-s"
"$bin/mqbench" produce --broker "127.0.0.1:$mport" --topic HABench --queues 8 --create-topic --conns 4 --inflight 16 \
  --size 1024 --duration 1s --progress never >/dev/null
kill -TERM "$slave_pid"; wait "$slave_pid" 2>/dev/null || true
base=$(max_offset "$mmetrics")
while [ "$(( $(max_offset "$mmetrics") - base ))" -lt "$catchup" ]; do
  "$bin/mqbench" produce --broker "127.0.0.1:$mport" --topic HABench --queues 8 --conns 16 --inflight 32 \
    --size 1024 --duration 5s --progress never >/dev/null
done
target=$(max_offset "$mmetrics")
start=$(date +%s.%N)
start_slave ASYNC_FLUSH "$store_root/ha-s"
from=$(max_offset "$smetrics")
while [ "$(max_offset "$smetrics")" != "$target" ]; do sleep 0.02; done
end=$(date +%s.%N)
stop_all
rm -rf "$store_root/ha-m" "$store_root/ha-s"
python3 - "$from" "$target" "$start" "$end" >"$out/catchup.txt" <<'PY'
import sys
frm, to, s, e = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
print(f"catch-up: {to-frm} bytes in {e-s:.2f} s (slave start included) = {(to-frm)/(e-s)/1e9:.2f} GB/s")
PY
cat "$out/catchup.txt"
python3 - "$out"/lag-round-*.txt >"$out/lag.txt" <<'PY'
import sys, statistics
v = [int(x) for f in sys.argv[1:] for x in open(f).read().split()]
if v:
    v.sort()
    print(f"replication lag during ASYNC_MASTER 4x16 ({len(v)} samples): median {statistics.median(v):.0f} B, "
          f"p99 {v[int(len(v)*0.99)-1]} B, max {v[-1]} B")
PY
cat "$out/lag.txt"
"$bin/mqbench" report "$out" --md "$out/report.md" --html "$out/report.html" --title "ASYNC_MASTER vs SYNC_MASTER, 1 KiB"
echo "wrote $out/report.md"
