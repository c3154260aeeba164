#!/usr/bin/env bash
# CPU per message of each server and client at 4 × 16, 1 KiB (ringmq: mqbroker + mqbench; NATS JetStream:
# nats-server + natscli), 2 rounds, into results/cpu-bound-<stamp>/summary.txt (BENCHMARKS.md "What bounds
# ASYNC throughput here"). Needs make build tools.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh # py, free_ports, wait_port
out=${OUT:-results/cpu-bound-$(date +%Y%m%dT%H%M%S)}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tck=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }                               # a process's CPU ticks
steal() { head -1 /proc/stat | awk '{print $9, $2+$3+$4+$5+$6+$7+$8+$9}'; } # stolen, all ticks
# per_msg TICKS0 TICKS1 MSGS: CPU µs per message; share STEAL0 STEAL1: stolen share of the machine between
per_msg() { "$py" -c "import sys; a, b, n = map(float, sys.argv[1:]); print(round((b - a) / $tck * 1e6 / n, 2))" "$@"; }
share() { "$py" -c "import sys; a, b = sys.argv[1].split(), sys.argv[2].split(); print(round((int(b[0]) - int(a[0])) / (int(b[1]) - int(a[1])), 3))" "$1" "$2"; }
natsmsgs=600000
for r in 1 2; do
  read -r port ns metrics ha natsport <<<"$(free_ports 5)"
  bin/mqbroker --storePathRootDir="$tmp/r$r" --listenPort="$port" --namesrvListenPort="$ns" --fastListenPort=0 \
    --haListenPort="$ha" --metricsAddr="127.0.0.1:$metrics" --mappedFileSizeCommitLog=134217728 >"$out/broker-$r.log" 2>&1 &
  bp=$!
  wait_port "$port"
  bin/mqbench produce --broker "127.0.0.1:$port" --create-topic --queues 8 --conns 4 --inflight 16 --size 1024 \
    --duration 1s --warmup 0 --progress never >/dev/null
  c0=$(cpu $bp); s0=$(steal)
  bin/mqbench produce --broker "127.0.0.1:$port" --queues 8 --conns 4 --inflight 16 --size 1024 --duration 8s \
    --warmup 0 --progress never --out "$out/ringmq-$r" >"$out/ringmq-$r.txt"
  c1=$(cpu $bp); s1=$(steal)
  kill -INT $bp; wait $bp || true
  msgs=$(grep -o "msgs=[0-9]*" "$out/ringmq-$r.txt" | cut -d= -f2)
  echo "ringmq round $r: $(grep -o 'rate=[0-9.]*\|client_cpu_us_per_msg=[0-9.]*' "$out/ringmq-$r.txt" | tr '\n' ' ') broker_cpu_us_per_msg=$(per_msg "$c0" "$c1" "$msgs") steal/total=$(share "$s0" "$s1")" | tee -a "$out/summary.txt"

  printf 'listen: 127.0.0.1:%s\njetstream {\n  store_dir: "%s"\n}\n' "$natsport" "$tmp/nats$r" >"$tmp/nats.conf"
  bin/tools/nats-server -c "$tmp/nats.conf" >"$out/nats-server-$r.log" 2>&1 &
  np=$!
  wait_port "$natsport"
  bin/tools/nats --server "nats://127.0.0.1:$natsport" bench js pub async ringmq.bench --batch 16 --clients 4 --msgs 20000 \
    --size 1024 --create --storage file --replicas 1 --maxbytes 4000000000 --no-progress >/dev/null 2>&1
  c0=$(cpu $np); s0=$(steal); t0=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$tmp/natscli.time" bin/tools/nats --server "nats://127.0.0.1:$natsport" bench js pub async \
    ringmq.bench --batch 16 --clients 4 --msgs $natsmsgs --size 1024 --no-progress --csv "$out/nats-$r.csv" >"$out/nats-$r.txt" 2>&1
  t1=$(date +%s.%N); c1=$(cpu $np); s1=$(steal)
  kill $np; wait $np || true
  echo "nats round $r: rate=$("$py" -c "print(round($natsmsgs / ($t1 - $t0)))") client_cpu_us_per_msg=$(awk -v n=$natsmsgs '{print ($1+$2)*1e6/n}' "$tmp/natscli.time") server_cpu_us_per_msg=$(per_msg "$c0" "$c1" $natsmsgs) steal/total=$(share "$s0" "$s1")" | tee -a "$out/summary.txt"
done
