#!/usr/bin/env bash
# One SYNC_FLUSH point against one build: fresh store, broker on loopback, mqbench produce, flush and
# pre-writing counters scraped from /metrics after the run. Prints one line:
#   build point mode backend filesize extra | mqbench summary | acks_per_sync syncs prewritten late
# Usage: run.sh BINDIR NAME CONNS INFLIGHT mmap|pool iouring|fdatasync|msync FILESIZE [extra broker flags...]
set -euo pipefail
bin=$1 name=$2 conns=$3 inflight=$4 mode=$5 backend=$6 fsize=$7; shift 7
work=${WORKDIR:-/work/pwbench}
dir=$(mktemp -d "$work/run.XXXX")
pool=false; [[ $mode == pool ]] && pool=true
"$bin/mqbroker" --storePathRootDir="$dir/store" --listenPort=20911 --namesrvListenPort=29876 --fastListenPort=0 \
  --flushDiskType=SYNC_FLUSH --transientStorePoolEnable=$pool --transientStorePoolPinned=false \
  --flushBackend="$backend" --mappedFileSizeCommitLog="$fsize" --metricsAddr=127.0.0.1:29911 "$@" \
  >"$dir/broker.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 600); do curl -sf 127.0.0.1:29911/metrics >/dev/null && break; sleep 0.1; done
sleep "${SETTLE:-3}" # the allocator prepares (and the new build pre-writes) the first files, as in a running broker
load=$(cut -d' ' -f1 /proc/loadavg)
out=$("$bin/mqbench" produce --broker 127.0.0.1:20911 --topic T --queues 8 --create-topic --conns "$conns" \
  --inflight "$inflight" --size 1024 --duration "${DURATION:-4s}" --warmup 1s --progress never 2>&1 | grep '^mqbench:')
m=$(curl -s 127.0.0.1:29911/metrics)
get() { awk -v k="$1" '$1==k {print $2}' <<<"$m"; }
acks=$(get 'ringmq_flush_acks_per_durable_write{service="commitlog_sync"}')
syncs=$(get 'ringmq_flush_durable_writes_total{service="commitlog_sync"}')
pw=$(get ringmq_store_prewritten_bytes_total); late=$(get ringmq_store_prewrite_late_files_total)
echo "$name ${conns}x${inflight} $mode $backend $fsize load=$load ${*:-} | ${out#mqbench: } | acks_per_sync=$acks syncs=$syncs prewritten=${pw:-na} late=${late:-na}"
