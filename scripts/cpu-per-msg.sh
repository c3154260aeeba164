#!/bin/bash
# CPU per message of each server and client at 4 × 16, 1 KiB (ringmq: mqbroker + mqbench; NATS JetStream:
# nats-server + natscli), 2 rounds, into bench/results/cpu-bound-<stamp>/summary.txt (BENCHMARKS.md "What bounds
# ASYNC throughput against NATS"). Needs make build tools; uses ports 30911-30912, 30876, 30106, 34222.
cd "$(dirname "$0")/.."
out=${OUT:-bench/results/cpu-bound-$(date +%Y%m%dT%H%M%S)}; mkdir -p "$out"
cpu() { awk '{print $14+$15}' /proc/$1/stat; }   # ticks
tck=$(getconf CLK_TCK)
steal() { head -1 /proc/stat | awk '{print $9, $2+$3+$4+$5+$6+$7+$8+$9}'; }
for r in 1 2; do
  rm -rf /tmp/cb; mkdir -p /tmp/cb
  bin/mqbroker --storePathRootDir=/tmp/cb/r --listenPort=30911 --namesrvListenPort=30876 --fastListenPort=0 --haListenPort=30912 --metricsAddr=127.0.0.1:30106 --mappedFileSizeCommitLog=134217728 > $out/broker-$r.log 2>&1 &
  bp=$!; for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/30911) 2>/dev/null && break; sleep 0.05; done
  bin/mqbench produce --broker 127.0.0.1:30911 --create-topic --queues 8 --conns 4 --inflight 16 --size 1024 --duration 1s --warmup 0 --progress never >/dev/null
  c0=$(cpu $bp); s0=$(steal)
  bin/mqbench produce --broker 127.0.0.1:30911 --queues 8 --conns 4 --inflight 16 --size 1024 --duration 8s --warmup 0 --progress never --out $out/ringmq-$r > $out/ringmq-$r.txt
  c1=$(cpu $bp); s1=$(steal)
  kill -INT $bp; wait $bp
  msgs=$(grep -o "msgs=[0-9]*" $out/ringmq-$r.txt | cut -d= -f2)
  echo "ringmq round $r: $(cat $out/ringmq-$r.txt | grep -o 'rate=[0-9.]*\|client_cpu_us_per_msg=[0-9.]*' | tr '\n' ' ') broker_cpu_us_per_msg=$(python3 -c "print(round(($c1-$c0)/$tck*1e6/$msgs,2))") steal/total=$(python3 -c "a='$s0'.split();b='$s1'.split();print(round((int(b[0])-int(a[0]))/(int(b[1])-int(a[1])),3))")" | tee -a $out/summary.txt
  rm -rf /tmp/cb; mkdir -p /tmp/cb
  printf 'listen: 127.0.0.1:34222\njetstream {\n  store_dir: "/tmp/cb/nats"\n}\n' > /tmp/cb/nats.conf
  bin/tools/nats-server -c /tmp/cb/nats.conf > $out/nats-server-$r.log 2>&1 &
  np=$!; for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/34222) 2>/dev/null && break; sleep 0.05; done
  bin/tools/nats --server nats://127.0.0.1:34222 bench js pub async ringmq.bench --batch 16 --clients 4 --msgs 20000 --size 1024 --create --storage file --replicas 1 --maxbytes 4000000000 --no-progress >/dev/null 2>&1
  c0=$(cpu $np); s0=$(steal); t0=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o /tmp/cb/natscli.time bin/tools/nats --server nats://127.0.0.1:34222 bench js pub async ringmq.bench --batch 16 --clients 4 --msgs 600000 --size 1024 --no-progress --csv $out/nats-$r.csv > $out/nats-$r.txt 2>&1
  t1=$(date +%s.%N); c1=$(cpu $np); s1=$(steal)
  kill $np; wait $np
  echo "nats round $r: rate=$(python3 -c "print(round(600000/($t1-$t0)))") client_cpu_us_per_msg=$(awk '{print ($1+$2)*1e6/600000}' /tmp/cb/natscli.time) server_cpu_us_per_msg=$(python3 -c "print(round(($c1-$c0)/$tck*1e6/600000,2))") steal/total=$(python3 -c "a='$s0'.split();b='$s1'.split();print(round((int(b[0])-int(a[0]))/(int(b[1])-int(a[1])),3))")" | tee -a $out/summary.txt
done
rm -rf /tmp/cb
