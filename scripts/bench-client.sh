#!/usr/bin/env bash
# Issue 17 item 5: is mqbench the bottleneck it measures? mqbench produce and the lean
# generator (mqbench lean: one goroutine per connection, frames encoded once, batched writes,
# responses parsed to the code only) against the same bin/mqbroker (ASYNC_FLUSH, mmap, gnet)
# at the same load (4 × 16, 1 KiB, 8 queues), in interleaved rounds: every round starts a
# fresh broker and runs both, the order alternating, so drift on a shared machine hits both
# alike. Prints each run's summary line (with the client's CPU share and µs per message),
# then the medians and the ratio mqbench / lean.
#
#   scripts/bench-client.sh                       # 3 rounds of 3 s runs after 1 s warm-up
#   ROUNDS=5 DURATION=5s scripts/bench-client.sh
#   PRODUCE_BIN=/tmp/old/bin/mqbench scripts/bench-client.sh   # an older mqbench produce vs lean
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=${GOFLAGS:--ldflags=-checklinkname=0}
rounds=${ROUNDS:-3}
duration=${DURATION:-3s}
warmup=${WARMUP:-1s}
conns=${CONNS:-4}
inflight=${INFLIGHT:-16}
out=${OUT:-results/client-$(date +%Y%m%dT%H%M%S)}
store_root=${STORE_DIR:-results/tmp}
BIN=${BIN:-bin}
PRODUCE_BIN=${PRODUCE_BIN:-$BIN/mqbench}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

mkdir -p "$out" "$store_root"
if [ -z "${NO_BUILD:-}" ]; then go build -o "$BIN/" ./cmd/mqbroker ./cmd/mqbench; fi
broker_pid=""
store=""
cleanup() {
  if [ -n "$broker_pid" ]; then kill -TERM "$broker_pid" 2>/dev/null || true; wait "$broker_pid" 2>/dev/null || true; fi
  if [ -n "$store" ]; then rm -rf "$store"; fi
}
trap cleanup EXIT

{
  echo "git=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!results' || echo +dirty) nproc=$(nproc) kernel=$(uname -r)"
  echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "load: ${conns} x ${inflight}, 1 KiB, 8 queues, ${duration} after ${warmup} warm-up, ${rounds} rounds"
  echo "produce: $PRODUCE_BIN; lean: $BIN/mqbench"
} | tee "$out/machine.txt"

run_gen() { # gen round
  local gen=$1 round=$2 extra=() bin=$BIN/mqbench
  if [ "$gen" = produce ]; then
    extra=(--progress never --out "$out/produce/round-$round" --name mqbench-produce)
    bin=$PRODUCE_BIN
  fi
  "$bin" "$gen" --broker "127.0.0.1:$port" --topic ClientCost --queues 8 \
    --conns "$conns" --inflight "$inflight" --size 1024 --duration "$duration" --warmup "$warmup" "${extra[@]}" \
    | tail -n 1 | sed "s/^/round $round $gen: /" | tee -a "$out/summary.txt"
}

for round in $(seq 1 "$rounds"); do
  store="$store_root/client-$round"
  rm -rf "$store"
  port=$(free_port); nsport=$(free_port)
  "$BIN/mqbroker" --storePathRootDir="$store" --brokerIP1=127.0.0.1 --listenPort="$port" \
    --namesrvListenPort="$nsport" --haListenPort="$(free_port)" --fastListenPort=0 \
    --mappedFileSizeCommitLog=268435456 --flushDiskType=ASYNC_FLUSH --netEngine=gnet \
    >"$out/broker-$round.log" 2>&1 &
  broker_pid=$!
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
  done
  # The topic first, so that neither generator pays for its creation.
  "$BIN/mqbench" produce --broker "127.0.0.1:$port" --topic ClientCost --queues 8 --create-topic \
    --count 100 --warmup 0 --duration 0 --progress never >/dev/null
  if [ $((round % 2)) -eq 1 ]; then order=(produce lean); else order=(lean produce); fi
  for gen in "${order[@]}"; do run_gen "$gen" "$round"; done
  kill -TERM "$broker_pid"; wait "$broker_pid" 2>/dev/null || true; broker_pid=""
  rm -rf "$store"; store=""
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"

python3 - "$out/summary.txt" <<'PY' | tee "$out/medians.txt"
import sys, statistics, collections, re
v = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    gen = line.split()[2].rstrip(':')
    for k, x in re.findall(r'(\w+)=([-\d.]+)', line):
        v[gen][k].append(float(x))
med = {g: {k: statistics.median(x) for k, x in d.items()} for g, d in v.items()}
for g in ("produce", "lean"):
    m = med[g]
    cpu = f"client CPU share {m['client_cpu_share']:.3f}, {m['client_cpu_us_per_msg']:.2f} µs/msg" if 'client_cpu_share' in m else "client CPU not reported"
    print(f"{g:8s} median rate {m['rate']:.0f} msgs/s over {len(v[g]['rate'])} runs; {cpu}")
ratios = [p / l for p, l in zip(v['produce']['rate'], v['lean']['rate'])]
print(f"mqbench / lean: median of per-round ratios {statistics.median(ratios):.3f} (rounds: {', '.join(f'{r:.3f}' for r in ratios)}); ratio of medians {med['produce']['rate'] / med['lean']['rate']:.3f}")
PY
echo "wrote $out"
