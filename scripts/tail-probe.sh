#!/usr/bin/env bash
# Tail attribution (issue 17 item 1): where do the slow sends of an open-loop ASYNC_FLUSH load come from?
#
# bin/mqbroker (fresh store per run, 128 MiB CommitLog files) takes RATE msgs/s of 1 KiB from
# `mqbench produce --rate` over CONNS connections, in several variants that each take one suspected cause
# away; every round runs every variant once (interleaved), ROUNDS rounds. For each run it keeps mqbench's
# run directory (client latency from the intended send time; the broker's histograms over the window:
# put latency and put lock, netio read passes, the Go scheduler's latencies, GC pauses), the broker's
# /metrics before and after (GC CPU, mark assist), and `vmstat 1` (dirty pages, writeback, run queue).
# The summary prints, per variant, the medians over rounds: client p50/p99/p99.9, the share of sends over
# 1 ms, and the broker-side p99.9s; a cause explains the share of slow sends that disappears without it.
#
#   scripts/tail-probe.sh                              # 3 rounds × 7 variants × 10 s, about 6 minutes
#   ROUNDS=1 DURATION=5s VARIANTS=base,pool scripts/tail-probe.sh
#   ATTRIBUTE=1 VARIANTS=base scripts/tail-probe.sh   # plus the share of slow sends per cause:
#            the broker runs its hiccup meter (hiccupMeterInterval=1), mqbench logs every send ≥ 1 ms and its
#            own stalls (--slow-log, --hiccup-log), /proc/stat's steal is sampled every 10 ms, and
#            scripts/tail-attribution.py matches each slow send against the stalls (attribution.md)
#
# Variants:
#   base     the defaults: mmap CommitLog, ASYNC_FLUSH (flush every 500 ms), GOGC 100, broker and load
#            generator sharing both CPUs
#   pool     transientStorePoolEnable=true: puts copy into pinned memory, never into a file page
#            (no page faults, no page under writeback), a committer writes the file
#   noflush  flushIntervalCommitLog=1 h: no msync during the run (the kernel's writeback still runs)
#   gogc     GOGC=400: a quarter of the GC cycles
#   split    broker pinned to CPU 0, mqbench to CPU 1 (taskset): they never take each other's CPU
#   loops1   netEventLoops=1: one event loop (no loop competing with the dispatcher for a CPU)
#   procs    GOMAXPROCS = CPUs + event loops (netEventLoops pinned to the CPU count): a gnet loop blocked
#            in epoll_wait keeps its P, so with GOMAXPROCS = CPUs a goroutine the loops make runnable (flush,
#            dispatcher, long-poll wake-ups, HA) can wait for sysmon to retake a P; spare Ps run it at once
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-bin}
rounds=${ROUNDS:-3}
duration=${DURATION:-10s}
warmup=${WARMUP:-2s}
rate=${RATE:-20000}
conns=${CONNS:-4}
inflight=${INFLIGHT:-256}
IFS=, read -r -a variants <<<"${VARIANTS:-base,pool,noflush,gogc,split,loops1,procs}"
out=${OUT:-results/tail-$(date +%Y%m%dT%H%M%S)}
store_root=${STORE_DIR:-results/tmp}
mkdir -p "$out" "$store_root"

source scripts/lib.sh # py, free_ports, wait_port

{
  echo "started $(date -u +%FT%TZ); nproc $(nproc); $(uname -r); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "rate $rate msgs/s, $conns connections, at most $inflight in flight each, 1 KiB, $duration after $warmup warm-up, $rounds rounds"
} | tee "$out/machine.txt"

run_one() { # run_one VARIANT ROUND
  local v=$1 r=$2 port nport mport hport store dir env=() broker_cpu=() bench_cpu=() extra=()
  read -r port nport mport hport <<<"$(free_ports 4)" # picked together: distinct (haListenPort's default, listenPort + 1, may be taken)
  store="$store_root/tail-$v-$r"; rm -rf "$store"; mkdir -p "$store"
  dir="$out/$v/round-$r"; mkdir -p "$dir"
  case $v in
    base) ;;
    pool) extra+=(--transientStorePoolEnable=true) ;;
    noflush) extra+=(--flushIntervalCommitLog=3600000) ;;
    gogc) env+=(GOGC=400) ;;
    split) broker_cpu=(taskset -c 0); bench_cpu=(taskset -c 1) ;;
    loops1) extra+=(--netEventLoops=1) ;;
    procs) env+=(GOMAXPROCS=$(( $(nproc) * 2 ))); extra+=(--netEventLoops="$(nproc)") ;;
    *) echo "unknown variant $v" >&2; exit 2 ;;
  esac
  if [ -n "${ATTRIBUTE:-}" ]; then extra+=(--hiccupMeterInterval=1); fi
  env "${env[@]}" GODEBUG=gctrace=1 "${broker_cpu[@]}" "$bin/mqbroker" --storePathRootDir="$store" \
    --listenPort="$port" --namesrvListenPort="$nport" --fastListenPort=0 --haListenPort="$hport" \
    --metricsAddr="127.0.0.1:$mport" --mappedFileSizeCommitLog=134217728 "${extra[@]}" \
    >"$dir/broker.log" 2>"$dir/broker.stderr" &
  local bpid=$!
  wait_port "$port" && wait_port "$mport" || { echo "broker $v did not start" >&2; cat "$dir/broker.stderr" >&2; kill $bpid; exit 1; }
  curl -s "http://127.0.0.1:$mport/metrics" >"$dir/metrics-before.txt"
  vmstat -n 1 >"$dir/vmstat.txt" &
  local vpid=$! spid="" attr=()
  if [ -n "${ATTRIBUTE:-}" ]; then
    # /proc/stat's steal every 10 ms (one python process; "unix_ns steal_ticks busy_ticks", all CPUs)
    "$py" -c 'import sys, time
out = open(sys.argv[1], "w", buffering=1)
while True:
    f = open("/proc/stat").readline().split()
    out.write(f"{time.time_ns()} {f[8]} {sum(int(x) for x in f[1:4] + f[6:9])}\n")
    time.sleep(0.01)' "$dir/steal.txt" &
    spid=$!
    attr=(--slow-log "$dir/slow.txt" --slow-threshold 1ms --hiccup-log "$dir/client-hiccups.txt")
  fi
  "${bench_cpu[@]}" "$bin/mqbench" produce --broker "127.0.0.1:$port" --create-topic --queues 8 \
    --conns "$conns" --inflight "$inflight" --rate "$rate" --size 1024 --duration "$duration" --warmup "$warmup" \
    --metrics "127.0.0.1:$mport" --progress never --name "$v" --out "$dir" --disk-path "$store" "${attr[@]}" >"$dir/mqbench.txt" 2>&1 ||
    echo "mqbench $v round $r failed (see $dir/mqbench.txt)" >&2
  curl -s "http://127.0.0.1:$mport/metrics" >"$dir/metrics-after.txt"
  if [ -n "${ATTRIBUTE:-}" ]; then
    curl -s "http://127.0.0.1:$mport/debug/hiccups" >"$dir/broker-hiccups.txt"
    kill "$spid" 2>/dev/null || true
  fi
  kill $vpid 2>/dev/null || true
  kill -INT $bpid; wait $bpid 2>/dev/null || true
  rm -rf "$store"
}

for r in $(seq 1 "$rounds"); do
  for v in "${variants[@]}"; do
    echo "round $r: $v"
    run_one "$v" "$r"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"

"$py" - "$out" "${variants[@]}" <<'PY' | tee "$out/summary.md"
import glob, json, os, re, statistics, sys
out, variants = sys.argv[1], sys.argv[2:]

def hgrm_share_over(path, us):
    # mqbench's HdrHistogram percentile output: Value (ms) Percentile TotalCount ...; share above us µs.
    below = 0.0
    for line in open(path):
        f = line.split()
        if len(f) >= 3 and re.match(r"^[0-9.]+$", f[0]) and re.match(r"^[0-9.]+$", f[1]):
            if float(f[0]) * 1000 <= us:
                below = float(f[1])
    return 1.0 - below

def counter(path, name):
    for line in open(path):
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0

def hist(h, name, q):
    for k, v in h.items():
        if k == name or k.startswith(name + "{"):
            return v.get(q, 0) * 1e6
    return float("nan")

rows = []
for v in variants:
    runs = []
    for d in sorted(glob.glob(f"{out}/{v}/round-*")):
        try:
            run = json.load(open(f"{d}/run.json"))
        except OSError:
            continue
        p = run["results"]["produce"]
        lat, h = p["latency"], run.get("broker", {}).get("histograms", {})
        secs = p["secs"]
        runs.append({
            "msgs": p["msgs_per_sec"], "p50": lat["p50_us"], "p99": lat["p99_us"], "p999": lat["p999_us"],
            "over1ms": 100 * hgrm_share_over(f"{d}/{p['hgrm_file']}", 1000),
            "put999": hist(h, "ringmq_store_put_latency_seconds", "p999"),
            "pass999": hist(h, "ringmq_netio_read_pass_seconds", "p999"),
            "sched99": hist(h, "go_sched_latencies_seconds", "p99"),
            "sched999": hist(h, "go_sched_latencies_seconds", "p999"),
            "gcpause_max_bucket": hist(h, "go_sched_pauses_total_gc_seconds", "p999"),
            "gc_per_s": (counter(f"{d}/metrics-after.txt", "go_gc_cycles_total_gc_cycles_total")
                         - counter(f"{d}/metrics-before.txt", "go_gc_cycles_total_gc_cycles_total")) / max(secs, 1e-9),
            "assist_ms_per_s": 1e3 * (counter(f"{d}/metrics-after.txt", "go_cpu_classes_gc_mark_assist_cpu_seconds_total")
                                      - counter(f"{d}/metrics-before.txt", "go_cpu_classes_gc_mark_assist_cpu_seconds_total")) / max(secs, 1e-9),
        })
    if runs:
        rows.append((v, len(runs), {k: statistics.median(r[k] for r in runs) for k in runs[0]}))

cols = [("msgs/s", "msgs", "%.0f"), ("p50 µs", "p50", "%.0f"), ("p99 µs", "p99", "%.0f"), ("p99.9 µs", "p999", "%.0f"),
        ("% > 1 ms", "over1ms", "%.2f"), ("put p99.9 µs", "put999", "%.0f"), ("read pass p99.9 µs", "pass999", "%.0f"),
        ("sched p99 µs", "sched99", "%.0f"), ("sched p99.9 µs", "sched999", "%.0f"), ("GC pause p99.9 µs", "gcpause_max_bucket", "%.0f"),
        ("GCs/s", "gc_per_s", "%.1f"), ("assist ms/s", "assist_ms_per_s", "%.1f")]
print("| variant | runs | " + " | ".join(c[0] for c in cols) + " |")
print("|---|---|" + "---|" * len(cols))
for v, n, m in rows:
    print(f"| {v} | {n} | " + " | ".join(c[2] % m[c[1]] for c in cols) + " |")
print()
print("Medians over rounds. Client latency from the intended send time (open loop); broker histograms over the")
print("measured window (Prometheus buckets, interpolated). sched = how long runnable goroutines waited for a CPU.")
PY

if [ -n "${ATTRIBUTE:-}" ]; then
  "$py" scripts/tail-attribution.py "$out"/*/round-* | tee "$out/attribution.md"
fi
