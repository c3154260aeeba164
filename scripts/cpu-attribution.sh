#!/usr/bin/env bash
# Where the broker's CPU goes per message, side by side for several builds (BENCHMARKS.md "The send path:
# where the CPU goes"). For each point (CONNSxINFLIGHT) and flush type, each build in turn, ROUNDS times:
# a fresh broker and store, a warm-up, then DURATION of `mqbench produce` (1 KiB) while the broker is
# profiled (pprof, middle of the run) and counted (perf stat: system calls, context switches; /proc: CPU).
#   BINS="before=/tmp/old/mqbroker after=bin/mqbroker" POINTS="4x16 16x32" FLUSH="ASYNC_FLUSH SYNC_FLUSH" scripts/cpu-attribution.sh
# Output: results/cpu-attribution-<stamp>/{summary.txt,attribution.md} and each run's files.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh # py, free_ports, wait_port
BINS=${BINS:-"current=bin/mqbroker"}
POINTS=${POINTS:-"4x16 16x32"}
FLUSH=${FLUSH:-"ASYNC_FLUSH SYNC_FLUSH"}
ROUNDS=${ROUNDS:-1}
DURATION=${DURATION:-10}
out=${OUT:-results/cpu-attribution-$(date +%Y%m%dT%H%M%S)}
mkdir -p "$out"
tmp=$(mktemp -d "${STORE_DIR:-/var/tmp}/cpu-attr.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tck=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
for r in $(seq 1 "$ROUNDS"); do
  for point in $POINTS; do
    conns=${point%x*} inflight=${point#*x}
    for flush in $FLUSH; do
      for spec in $BINS; do
        label=${spec%%=*} bin=${spec#*=}
        run="$out/$label-$flush-$point-r$r"
        mkdir -p "$run"
        read -r port ns metrics ha <<<"$(free_ports 4)"
        "$bin" --storePathRootDir="$tmp/s" --listenPort="$port" --namesrvListenPort="$ns" --fastListenPort=0 \
          --haListenPort="$ha" --metricsAddr="127.0.0.1:$metrics" --mappedFileSizeCommitLog=134217728 \
          --flushDiskType="$flush" >"$run/broker.log" 2>&1 &
        bp=$!
        wait_port "$port"
        bin/mqbench produce --broker "127.0.0.1:$port" --create-topic --queues 8 --conns "$conns" --inflight "$inflight" \
          --size 1024 --duration 2s --warmup 0 --progress never >/dev/null
        perf stat -e context-switches,raw_syscalls:sys_enter -p "$bp" -o "$run/perfstat.txt" 2>/dev/null &
        ps=$!
        c0=$(cpu $bp)
        bin/mqbench produce --broker "127.0.0.1:$port" --queues 8 --conns "$conns" --inflight "$inflight" --size 1024 \
          --duration "${DURATION}s" --warmup 0 --progress never >"$run/produce.txt" &
        pp=$!
        sleep 1
        curl -s -o "$run/cpu.pprof" "http://127.0.0.1:$metrics/debug/pprof/profile?seconds=$((DURATION - 3))"
        wait $pp
        c1=$(cpu $bp)
        kill -INT $ps 2>/dev/null; wait $ps || true
        kill -INT $bp; wait $bp || true
        rm -rf "$tmp/s"
        msgs=$(grep -o "msgs=[0-9]*" "$run/produce.txt" | cut -d= -f2)
        rate=$(grep -o "rate=[0-9.]*" "$run/produce.txt" | cut -d= -f2)
        per() { awk -v n="$msgs" -v k="$1" '$2==k {gsub(",","",$1); printf "%.2f", $1/n}' "$run/perfstat.txt"; }
        line="$label $flush $point round $r: rate=$rate broker_cpu_us_per_msg=$("$py" -c "print(round(($c1-$c0)/$tck*1e6/$msgs,2))") syscalls_per_msg=$(per raw_syscalls:sys_enter) ctxsw_per_msg=$(per context-switches)"
        echo "$line" | tee -a "$out/summary.txt"
        # messages in the profile's window: the run's rate times the profile's length
        "$py" scripts/cpu-attribution.py "$bin" "$run/cpu.pprof" "$("$py" -c "print($rate * ($DURATION - 3))")" \
          "$label, $flush $point" >>"$out/attribution.md"
        echo >>"$out/attribution.md"
      done
    done
  done
done
echo "summary: $out/summary.txt; tables: $out/attribution.md"
