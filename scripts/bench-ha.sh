#!/usr/bin/env bash
# Replication benchmarks (issue 16): a master and a slave of bin/mqbroker on loopback, 1 KiB messages.
#  1. ASYNC_MASTER vs SYNC_MASTER, each under ASYNC_FLUSH and SYNC_FLUSH, at 1×1, 4×16 and 16×32
#     (connections × requests in flight), closed loop, interleaved rounds (every round runs every
#     configuration once; mqbench report gives medians).
#  2. Replication lag (bytes) sampled from both brokers' /metrics every 100 ms during ASYNC_MASTER 4×16.
#  3. Catch-up: a slave stopped while CATCHUP_BYTES (or a little more) are written, then started again:
#     bytes/s until its CommitLog end equals the master's, and the CPU seconds per GB each side spent.
#
#   scripts/bench-ha.sh                         # 3 rounds of 5 s runs, 2 GiB catch-up
#   ROUNDS=1 DURATION=2s CATCHUP_BYTES=268435456 scripts/bench-ha.sh   # a quick look
#   CONFIGS="SYNC_MASTER SYNC_FLUSH" POINTS="4 16" CATCHUP_BYTES=0 scripts/bench-ha.sh   # one point
#   CONFIGS= CATCHUP_BYTES=1073741824 scripts/bench-ha.sh    # the catch-up only (an empty CONFIGS runs no point)
#   CATCHUP_ROUNDS=3: the catch-up that many times (fill once, then start the slave again each time from a
#   copy of its stopped store; the last line gives the medians). PROFILE=1 takes CPU profiles of master and slave during each catch-up
#   (catchup-{master,slave}-N.pprof, PROFILE_SECONDS long, 3 by default); TRACE=1 a runtime/trace of each
#   (catchup-{master,slave}-N.trace, TRACE seconds long); PERF=2 a system-wide perf record (catchup-N.perf).
#   COLD=1: before each catch-up round the master's CommitLog is dropped from the page cache
#   (posix_fadvise DONTNEED; the pages its restart mapped stay), so the master reads from the disk, as it
#   does for a slave far behind (this VM's DAMON also pages out file pages idle for about a minute).
#   CONFIGS may name CONTROLLER (with a flush type) for controller mode: a name server embedding a controller
#   and two replicas with enableControllerMode=true; the one elected master takes the load, its sends wait
#   for every replica of the SyncStateSet (CONFIGS="ASYNC_MASTER ASYNC_FLUSH,SYNC_MASTER ASYNC_FLUSH,
#   CONTROLLER ASYNC_FLUSH" CATCHUP_BYTES=0 compares it with both 4.x modes).
#   BINS="new=bin old=/tmp/old/bin": an A/B of builds (directories with mqbroker; mqbench is always
#   $BIN's). Every round runs every configuration with each build in turn (results named ...-new, ...-old),
#   and every catch-up round restarts the master and the slave from each build in turn.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-bin}
rounds=${ROUNDS:-3}
duration=${DURATION:-5s}
warmup=${WARMUP:-1s}
catchup=${CATCHUP_BYTES:-2147483648}
out=${OUT:-results/ha-$(date +%Y%m%dT%H%M%S)}
# Every scratch directory (the stores, the controller's ns.conf and raft store) lives under one mktemp
# directory, removed on exit: on STORE_DIR's disk (the stores are what is measured, so not on a tmpfs /tmp),
# never loose in the repository.
store_parent=${STORE_DIR:-results/tmp}
IFS=, read -r -a configs <<<"${CONFIGS-ASYNC_MASTER ASYNC_FLUSH,SYNC_MASTER ASYNC_FLUSH,ASYNC_MASTER SYNC_FLUSH,SYNC_MASTER SYNC_FLUSH}"
IFS=, read -r -a points <<<"${POINTS:-1 1,4 16,16 32}"
read -r -a builds <<<"${BINS:-=$bin}" # tag=dir; the default has no tag

source scripts/lib.sh # py, free_ports, wait_port
max_offset() { curl -s "http://127.0.0.1:$1/metrics" | awk '/^ringmq_store_commitlog_max_offset_bytes /{printf "%.0f\n", $2}'; }
# sample_lag SLAVE_METRICS MASTER_METRICS: master end - slave end every 100 ms until killed, from one process
# (run it in the background: it execs, so that $! is the sampler itself).
sample_lag() {
  exec "$py" -u - "$1" "$2" <<'PY'
import http.client, sys, time
ports = [int(p) for p in sys.argv[1:3]]
conns = {}
def offset(port):
    c = conns.setdefault(port, http.client.HTTPConnection("127.0.0.1", port, timeout=10))
    try:
        c.request("GET", "/metrics")
        body = c.getresponse().read().decode()
    except (OSError, http.client.HTTPException):
        c.close()
        del conns[port]
        return None
    for line in body.splitlines():
        if line.startswith("ringmq_store_commitlog_max_offset_bytes "):
            return int(float(line.split()[1]))
while True:
    time.sleep(0.1)
    s, m = offset(ports[0]), offset(ports[1])
    if s is not None and m is not None:
        print(m - s)
PY
}

# watch_catchup METRICS_PORT TARGET PID...: one process polls the slave's CommitLog end every 20 ms over one
# HTTP connection until it reaches TARGET (curl + awk every 10 ms took a quarter of the 2 vCPUs), then
# prints the bytes and seconds from the first poll to the last, the rate between 10 % and 90 % of the way,
# both times, and the CPU seconds the PIDs (master, slave) used meanwhile.
watch_catchup() {
  "$py" - "$@" <<'PY'
import http.client, os, sys, time
port, target, pids = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
def cpu():
    return [sum(int(x) for x in open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[11:13]) / os.sysconf("SC_CLK_TCK")
            for p in pids]
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
def offset():
    conn.request("GET", "/metrics")
    for line in conn.getresponse().read().decode().splitlines():
        if line.startswith("ringmq_store_commitlog_max_offset_bytes "):
            return int(float(line.split()[1]))
    return 0
samples = []
cpu0 = cpu()
while True:
    t, o = time.time(), offset()
    samples.append((t, o))
    if o >= target:
        break
    time.sleep(0.02)
cpu1 = cpu()
if os.environ.get("SAMPLES_FILE"):  # the whole curve: seconds since the first poll, bytes caught up
    with open(os.environ["SAMPLES_FILE"], "w") as f:
        f.writelines(f"{t - samples[0][0]:.3f} {o - samples[0][1]}\n" for t, o in samples)
(t0, o0), (t1, o1) = samples[0], samples[-1]
def at(frac):  # first sample past frac of the way, interpolated
    want = o0 + frac * (o1 - o0)
    for (ta, oa), (tb, ob) in zip(samples, samples[1:]):
        if ob >= want:
            return ta + (tb - ta) * (want - oa) / max(ob - oa, 1)
    return t1
a, b = at(0.1), at(0.9)
print(o1 - o0, f"{t1 - t0:.3f}", f"{0.8 * (o1 - o0) / max(b - a, 1e-9) / 1e9:.2f}", f"{t0:.3f}", f"{t1:.3f}",
      ",".join(f"{b - a:.2f}" for a, b in zip(cpu0, cpu1)))
PY
}

mkdir -p "$out" "$store_parent"
store_root=$(mktemp -d -p "$store_parent" bench-ha.XXXXXX)
pids=()
stop_all() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap 'stop_all; rm -rf "$store_root"' EXIT

# start_master ROLE FLUSH STORE [BINDIR] → sets mport mmetrics mha mlog master_pid
start_master() {
  mlog="$out/master-$logtag.log"
  local ns; read -r mport mha mmetrics ns <<<"$(free_ports 4)"
  "${4:-$bin}/mqbroker" --storePathRootDir="$3" --brokerIP1=127.0.0.1 --listenPort="$mport" --haListenPort="$mha" \
    --namesrvListenPort="$ns" --metricsAddr="127.0.0.1:$mmetrics" --brokerRole="$1" --flushDiskType="$2" --fastListenPort=0 \
    --mappedFileSizeCommitLog=268435456 ${HA_BATCH:+--haTransferBatchSize=$HA_BATCH} >"$mlog" 2>&1 &
  master_pid=$!
  pids+=($master_pid)
  wait_port "$mport"
}
# start_slave FLUSH STORE [LOGTAG [BINDIR]] → sets smetrics slave_pid; returns once the master logged one
# more slave
start_slave() {
  local port sha; read -r port smetrics sha <<<"$(free_ports 3)"
  local seen; seen=$(grep -c "ha: slave connected" "$mlog" 2>/dev/null || true)
  "${4:-$bin}/mqbroker" --storePathRootDir="$2" --brokerIP1=127.0.0.1 --listenPort="$port" --haListenPort="$sha" \
    --namesrvEmbedded=false --fastListenPort=0 --metricsAddr="127.0.0.1:$smetrics" --brokerRole=SLAVE --brokerId=1 \
    --haMasterAddress="127.0.0.1:$mha" --flushDiskType="$1" --mappedFileSizeCommitLog=268435456 >"$out/slave-${3:-$logtag}.log" 2>&1 &
  slave_pid=$!
  pids+=($slave_pid)
  wait_port "$port"
  for _ in $(seq 1 1000); do
    [ "$(grep -c "ha: slave connected" "$mlog" 2>/dev/null || true)" -gt "${seen:-0}" ] && return 0; sleep 0.01
  done
}

# metric PORT NAME: the value of a series without labels on a broker's /metrics ("" when absent).
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n {print $2}'; }
# start_controlled FLUSH [BINDIR] → sets mport mmetrics smetrics mlog: controller mode, a name server with an
# embedded controller and two replicas; the first to register is elected master; returns once the other is
# in its SyncStateSet.
start_controlled() {
  local ns raft sport sha mha; read -r ns raft mport mha mmetrics sport sha smetrics <<<"$(free_ports 8)"
  local b=${2:-$bin} dir="$store_root/ctl"
  rm -rf "$dir"; mkdir -p "$dir"
  printf 'listenPort=%s\nmetricsAddr=off\nenableControllerInNamesrv=true\ncontrollerPeers=n0-127.0.0.1:%s\ncontrollerSelfId=n0\ncontrollerStorePath=%s/raft\n' \
    "$ns" "$raft" "$dir" >"$dir/ns.conf"
  "$b/mqnamesrv" -c "$dir/ns.conf" >"$out/namesrv-$logtag.log" 2>&1 &
  pids+=($!)
  wait_port "$ns"
  local common=(--brokerIP1=127.0.0.1 --brokerName=bench-ha --namesrvEmbedded=false --namesrvAddr="127.0.0.1:$ns"
    --enableControllerMode=true --controllerAddr="127.0.0.1:$ns" --fastListenPort=0 --flushDiskType="$1"
    --mappedFileSizeCommitLog=268435456)
  mlog="$out/master-$logtag.log"
  "$b/mqbroker" "${common[@]}" --storePathRootDir="$store_root/ha-m" --listenPort="$mport" --haListenPort="$mha" \
    --metricsAddr="127.0.0.1:$mmetrics" >"$mlog" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 3000); do [ "$(metric "$mmetrics" ringmq_controlled_is_master)" = 1 ] && break; sleep 0.01; done
  "$b/mqbroker" "${common[@]}" --storePathRootDir="$store_root/ha-s" --listenPort="$sport" --haListenPort="$sha" \
    --metricsAddr="127.0.0.1:$smetrics" >"$out/slave-$logtag.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 3000); do [ "$(metric "$mmetrics" ringmq_controlled_sync_state_set_size)" = 2 ] && return 0; sleep 0.01; done
  echo "controller mode: the second replica did not join the SyncStateSet (see $out)" >&2
  return 1
}

for round in $(seq 1 "$rounds"); do
  for c in "${configs[@]}"; do
    for build in "${builds[@]}"; do
      tag=${build%%=*}; bdir=${build#*=}
      read -r role flush <<<"$c"
      logtag="$role-$flush-$round${tag:+-$tag}"
      rm -rf "$store_root/ha-m" "$store_root/ha-s"
      if [ "$role" = CONTROLLER ]; then
        start_controlled "$flush" "$bdir"
      else
        start_master "$role" "$flush" "$store_root/ha-m" "$bdir"
        start_slave "$flush" "$store_root/ha-s" "" "$bdir"
      fi
      for p in "${points[@]}"; do
        read -r conns inflight <<<"$p"
        name="$role-$flush-${conns}x${inflight}${tag:+-$tag}"
        lagfile=""
        if [ "$role $flush $conns" = "ASYNC_MASTER ASYNC_FLUSH 4" ]; then
          lagfile="$out/lag-round-$round${tag:+-$tag}.txt"
          sample_lag "$smetrics" "$mmetrics" >"$lagfile" &
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
done
rm -rf "$store_root/ha-m" "$store_root/ha-s"

if [ "$catchup" -le 0 ]; then
  "$bin/mqbench" report "$out" --md "$out/report.md" --html "$out/report.html" --title "ASYNC_MASTER vs SYNC_MASTER, 1 KiB"
  exit 0
fi
# Catch-up: the slave follows a little, stops, CATCHUP_BYTES are written, the slave starts again. Its stopped
# store is kept (ha-s.stopped) so that every catch-up round starts from the same point.
logtag=catchup
catchup_rounds=${CATCHUP_ROUNDS:-1}
start_master ASYNC_MASTER ASYNC_FLUSH "$store_root/ha-m" "${builds[0]#*=}"
start_slave ASYNC_FLUSH "$store_root/ha-s" "" "${builds[0]#*=}"
"$bin/mqbench" produce --broker "127.0.0.1:$mport" --topic HABench --queues 8 --create-topic --conns 4 --inflight 16 \
  --size 1024 --duration 1s --progress never >/dev/null
kill -TERM "$slave_pid"; wait "$slave_pid" 2>/dev/null || true
rm -rf "$store_root/ha-s.stopped"; cp -a --sparse=always "$store_root/ha-s" "$store_root/ha-s.stopped"
base=$(max_offset "$mmetrics")
while [ "$(( $(max_offset "$mmetrics") - base ))" -lt "$catchup" ]; do
  "$bin/mqbench" produce --broker "127.0.0.1:$mport" --topic HABench --queues 8 --conns 16 --inflight 32 \
    --size 1024 --duration 5s --progress never >/dev/null
done
target=$(max_offset "$mmetrics")
stop_all
: >"$out/catchup.txt"
for cr in $(seq 1 "$catchup_rounds"); do
 for build in "${builds[@]}"; do
  tag=${build%%=*}; bdir=${build#*=}
  # The master restarts on its store (its pages are still cached), the slave from its stopped store.
  logtag=catchup-$cr${tag:+-$tag}
  start_master ASYNC_MASTER ASYNC_FLUSH "$store_root/ha-m" "$bdir"
  rm -rf "$store_root/ha-s"; cp -a "$store_root/ha-s.stopped" "$store_root/ha-s"
  sync; sleep 1 # the copy's writeback is not this round's
  if [ -n "${COLD:-}" ]; then # the master's CommitLog leaves the page cache (but what its restart mapped)
    "$py" -c 'import glob, os, sys
for p in glob.glob(sys.argv[1] + "/commitlog/*"):
    fd = os.open(p, os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$store_root/ha-m"
  fi
  start=$(date +%s.%N)
  start_slave ASYNC_FLUSH "$store_root/ha-s" "" "$bdir"
  prof=()
  if [ -n "${PROFILE:-}" ]; then
    for side in master:$mmetrics slave:$smetrics; do
      curl -s -o "$out/catchup-${side%%:*}-$cr.pprof" \
        "http://127.0.0.1:${side#*:}/debug/pprof/profile?seconds=${PROFILE_SECONDS:-3}" &
      prof+=($!)
    done
  fi
  if [ -n "${PERF:-}" ]; then # perf record of the whole machine, PERF seconds long
    perf record -a -g -o "$out/catchup-$cr.perf" -- sleep "$PERF" >/dev/null 2>&1 &
    prof+=($!)
  fi
  if [ -n "${TRACE:-}" ]; then # a runtime/trace of each side, TRACE seconds long
    for side in master:$mmetrics slave:$smetrics; do
      curl -s -o "$out/catchup-${side%%:*}-$cr.trace" "http://127.0.0.1:${side#*:}/debug/pprof/trace?seconds=$TRACE" &
      prof+=($!)
    done
  fi
  read -r bytes secs mid t1 end cpus < <(SAMPLES_FILE="$out/catchup-samples-$cr${tag:+-$tag}.txt" watch_catchup "$smetrics" "$target" "$master_pid" "$slave_pid")
  for p in "${prof[@]}"; do wait "$p" || true; done
  stop_all
  # Timed from the first poll after the connect (a little may be in already) to the first poll at the
  # master's end; once more from before the slave process started; and the rate between 10 % and 90 %.
  "$py" - "$cr" "$bytes" "$secs" "$mid" "$start" "$end" "$cpus" "$tag" >>"$out/catchup.txt" <<'PY'
import sys
cr, n, secs, mid, s, e = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], float(sys.argv[5]), float(sys.argv[6])
m, sl = (float(x) for x in sys.argv[7].split(","))
print(f"catch-up round {cr}{(' (' + sys.argv[8] + ')') if len(sys.argv) > 8 and sys.argv[8] else ''}: {n} bytes in {secs:.2f} s after the connect = {n/secs/1e9:.2f} GB/s "
      f"(10-90 %: {mid} GB/s); {e-s:.2f} s including the slave process's start; "
      f"CPU s per GB: master {m/n*1e9:.2f}, slave {sl/n*1e9:.2f}")
PY
 done
done
rm -rf "$store_root/ha-m" "$store_root/ha-s" "$store_root/ha-s.stopped"
"$py" - "$out/catchup.txt" >>"$out/catchup.txt" <<'PY'
import re, statistics, sys
groups = {}
for l in open(sys.argv[1]):
    m = re.match(r"catch-up round \d+( \((.*)\))?:", l)
    if m:
        groups.setdefault(m.group(2) or "", []).append(l)
for tag, rows in groups.items():
    def med(pat):
        return statistics.median(float(re.search(pat, l).group(1)) for l in rows)
    print(f"catch-up median of {len(rows)}{' (' + tag + ')' if tag else ''}: {med(r'= ([0-9.]+) GB/s '):.2f} GB/s after "
          f"the connect, {med(r'10-90 %: ([0-9.]+)'):.2f} GB/s from 10 to 90 %; CPU s per GB: master "
          f"{med(r'master ([0-9.]+)'):.2f}, slave {med(r'slave ([0-9.]+)'):.2f}")
PY
cat "$out/catchup.txt"
if [ "${#configs[@]}" -eq 0 ]; then exit 0; fi
: >"$out/lag.txt"
for build in "${builds[@]}"; do
  tag=${build%%=*}
  "$py" - "$tag" "$out"/lag-round-*.txt >>"$out/lag.txt" <<'PY'
import re, statistics, sys
tag = sys.argv[1]
files = [f for f in sys.argv[2:] if re.search(r"lag-round-\d+" + ("-" + re.escape(tag) if tag else "") + r"\.txt$", f)]
v = [int(x) for f in files for x in open(f).read().split()]
if v:
    v.sort()
    print(f"replication lag during ASYNC_MASTER 4x16{' (' + tag + ')' if tag else ''} ({len(v)} samples): "
          f"median {statistics.median(v):.0f} B, p99 {v[int(len(v)*0.99)-1]} B, max {v[-1]} B")
PY
done
cat "$out/lag.txt"
"$bin/mqbench" report "$out" --md "$out/report.md" --html "$out/report.html" --title "ASYNC_MASTER vs SYNC_MASTER, 1 KiB"
echo "wrote $out/report.md"
