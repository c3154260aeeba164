#!/usr/bin/env bash
# Two commits side by side (e.g. before and after a refactoring, issue 15): the in-process send
# and pull path benchmarks (broker BenchmarkSendPath / BenchmarkPullPath: ns/op and allocs/op)
# and bin/mqbroker under mqbench at 4 × 16 and 16 × 32 (connections × requests in flight,
# 1 KiB, ASYNC_FLUSH, mmap), in interleaved rounds: every round runs BASE then HEAD at every
# point, so drift on a shared machine hits both alike. `mqbench report` gives the medians.
#
#   scripts/bench-compare.sh                     # BASE=67cbc82, 3 rounds of 5 s runs
#   BASE=HEAD~3 ROUNDS=1 DURATION=2s scripts/bench-compare.sh
#
# BASE is checked out into a temporary git worktree and built there; HEAD is the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=${GOFLAGS:--ldflags=-checklinkname=0}
base=${BASE:-67cbc82}
rounds=${ROUNDS:-3}
duration=${DURATION:-5s}
warmup=${WARMUP:-1s}
benchtime=${BENCHTIME:-200000x}
out=${OUT:-results/compare-$(date +%Y%m%dT%H%M%S)}
store_root=${STORE_DIR:-results/tmp}
points=("4 16" "16 32")

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

mkdir -p "$out" "$store_root"
basedir=$(mktemp -d /tmp/ringmq-base.XXXXXX)
broker_pid=""
cleanup() {
  if [ -n "$broker_pid" ]; then kill -TERM "$broker_pid" 2>/dev/null || true; wait "$broker_pid" 2>/dev/null || true; fi
  git worktree remove --force "$basedir" >/dev/null 2>&1 || true
  rm -rf "$basedir"
}
trap cleanup EXIT

git worktree add -q --detach "$basedir" "$base"
base_rev=$(git -C "$basedir" rev-parse --short HEAD)
head_rev="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!results' || echo +dirty)"
echo "base $base_rev, head $head_rev; building"
(cd "$basedir" && go build -o bin/ ./cmd/mqbroker)
go build -o bin/ ./cmd/mqbroker ./cmd/mqbench
(cd "$basedir" && go test -c -o bin/broker.test ./broker/)
go test -c -o bin/broker.test ./broker/

{
  echo "base=$base_rev head=$head_rev nproc=$(nproc) kernel=$(uname -r) rounds=$rounds duration=$duration"
} >"$out/machine.txt"

for round in $(seq 1 "$rounds"); do
  for side in base head; do
    dir=.; [ "$side" = base ] && dir=$basedir
    # In-process paths: no network, the processors driven directly.
    (cd "$dir/broker" && ../bin/broker.test -test.run='^$' -test.bench='^Benchmark(SendPath|PullPath)$' \
      -test.benchtime="$benchtime" -test.benchmem) | grep '^Benchmark' | sed "s/^/$side round $round: /" | tee -a "$out/paths.txt"

    store="$store_root/compare-$side-$round"
    rm -rf "$store"
    port=$(free_port); nsport=$(free_port); metrics=$(free_port)
    "$dir/bin/mqbroker" --storePathRootDir="$store" --brokerIP1=127.0.0.1 --listenPort="$port" \
      --namesrvListenPort="$nsport" --haListenPort="$(free_port)" --fastListenPort=0 --metricsAddr="127.0.0.1:$metrics" \
      --mappedFileSizeCommitLog=268435456 --flushDiskType=ASYNC_FLUSH \
      >"$out/broker-$side-$round.log" 2>&1 &
    broker_pid=$!
    for _ in $(seq 1 100); do
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
      sleep 0.1
    done
    for p in "${points[@]}"; do
      read -r conns inflight <<<"$p"
      name="$side-${conns}x${inflight}"
      bin/mqbench produce --broker "127.0.0.1:$port" --topic Compare --queues 8 --create-topic \
        --conns "$conns" --inflight "$inflight" --size 1024 --duration "$duration" --warmup "$warmup" \
        --metrics "127.0.0.1:$metrics" --name "$name" --out "$out/$name/round-$round" --progress never | tail -n 1
    done
    kill -TERM "$broker_pid"; wait "$broker_pid" 2>/dev/null || true; broker_pid=""
    rm -rf "$store"
  done
done

# Medians of the in-process paths per side and benchmark (mawk has no sort: python3 does it).
python3 - "$out/paths.txt" <<'PY' | tee "$out/paths-median.txt"
import sys, statistics, collections
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    runs[(f[0], f[3])].append((float(f[5]), f[-2]))
for (side, bench), v in sorted(runs.items()):
    print(f"{side} {bench} median {statistics.median(x for x, _ in v):.0f} ns/op over {len(v)} rounds, "
          f"{max(int(a) for _, a in v)} allocs/op at most")
PY
bin/mqbench report "$out" --md "$out/report.md" --html "$out/report.html" --title "$base_rev vs $head_rev"
echo "wrote $out/report.md, $out/paths-median.txt"
