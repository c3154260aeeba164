#!/usr/bin/env bash
# Profile one SYNC_FLUSH point: durable-operation latency (the group commit's histogram), CPU of broker
# and client, a runtime trace (scheduler latency by stack) and a CPU profile of the broker.
# Usage: profile.sh BINDIR CONNS INFLIGHT mmap|pool BACKEND OUTDIR [extra broker flags]
set -euo pipefail
bin=$1 conns=$2 inflight=$3 mode=$4 backend=$5 out=$6; shift 6
mkdir -p "$out"; work=${WORKDIR:-/work/pwbench}; dir=$(mktemp -d "$work/prof.XXXX")
pool=false; [[ $mode == pool ]] && pool=true
"$bin/mqbroker" --storePathRootDir="$dir/store" --listenPort=20911 --namesrvListenPort=29876 --fastListenPort=0 \
  --flushDiskType=SYNC_FLUSH --transientStorePoolEnable=$pool --transientStorePoolPinned=false \
  --flushBackend="$backend" --mappedFileSizeCommitLog=134217728 --metricsAddr=127.0.0.1:29911 "$@" >"$dir/broker.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf 127.0.0.1:29911/metrics >/dev/null && break; sleep 0.1; done
sleep 3
"$bin/mqbench" produce --broker 127.0.0.1:20911 --topic T --queues 8 --create-topic --conns "$conns" --inflight "$inflight" \
  --size 1024 --duration 6s --warmup 1s --progress never >"$out/mqbench.txt" 2>&1 &
bpid=$!
sleep 2
curl -s 127.0.0.1:29911/metrics | grep -E '^ringmq_flush_(latency_seconds_(sum|count)|durable_writes_total|acks_total)\{service="commitlog_sync"' >"$out/metrics-before.txt"
t0=$(awk '{print $14+$15}' /proc/$pid/stat); c0=$(awk '{print $14+$15}' /proc/$bpid/stat); s0=$(date +%s.%N)
curl -s "127.0.0.1:29911/debug/pprof/trace?seconds=2" >"$out/trace.out"
t1=$(awk '{print $14+$15}' /proc/$pid/stat); c1=$(awk '{print $14+$15}' /proc/$bpid/stat); s1=$(date +%s.%N)
curl -s 127.0.0.1:29911/metrics | grep -E '^ringmq_flush_(latency_seconds_(sum|count)|durable_writes_total|acks_total)\{service="commitlog_sync"' >"$out/metrics-after.txt"
echo "broker_cpu_share=$(echo "($t1-$t0)/100/($s1-$s0)" | bc -l) client_cpu_share=$(echo "($c1-$c0)/100/($s1-$s0)" | bc -l) load=$(cut -d' ' -f1 /proc/loadavg)" >"$out/cpu.txt"
wait $bpid || true
kill $pid; wait $pid || true; rm -rf "$dir"
go tool trace -pprof=sched "$out/trace.out" >"$out/sched.pprof" 2>/dev/null || true
go tool trace -pprof=syscall "$out/trace.out" >"$out/syscall.pprof" 2>/dev/null || true
go tool pprof -top -nodecount=25 "$bin/mqbroker" "$out/sched.pprof" >"$out/sched-top.txt" 2>/dev/null || true
go tool pprof -top -nodecount=25 "$bin/mqbroker" "$out/syscall.pprof" >"$out/syscall-top.txt" 2>/dev/null || true
rm -f "$out/sched.pprof" "$out/syscall.pprof"
python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
def load(f):
    d = {}
    for line in open(f"{out}/{f}"):
        k, v = line.rsplit(' ', 1); d[k.split('{')[0]] = float(v)
    return d
a, b = load('metrics-before.txt'), load('metrics-after.txt')
n = b['ringmq_flush_latency_seconds_count'] - a['ringmq_flush_latency_seconds_count']
s = b['ringmq_flush_latency_seconds_sum'] - a['ringmq_flush_latency_seconds_sum']
acks = b['ringmq_flush_acks_total'] - a['ringmq_flush_acks_total']
print(f"in the 2 s window: durable ops {n:.0f} ({n/2:.0f}/s), mean op {s/n*1e6:.0f} us, disk busy {s/2*100:.0f} %, acks/op {acks/n:.1f}, acks/s {acks/2:.0f}")
PY
