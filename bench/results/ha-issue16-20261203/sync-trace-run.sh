#!/usr/bin/env bash
# How sync-trace-breakdown.txt was made: TRACE=1 ROLE=SYNC_MASTER DUR=4s sync-trace-run.sh, then
#   go tool trace -d=parsed $OUT/master.trace > master.txt (slave likewise); python3 sync-trace-cycles.py master.txt slave.txt
# one SYNC_MASTER master + slave, 1x1 load, runtime traces of both
set -euo pipefail
cd "$(dirname "$0")/../../.."
BIN=${BIN:-bin}
py=python3
free_port() { $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }
out=${OUT:-/tmp/ha-tr}
rm -rf "$out/m" "$out/s"; mkdir -p "$out"
mport=$(free_port); mha=$(free_port); mm=$(free_port); ns=$(free_port); sport=$(free_port); sm=$(free_port)
$BIN/mqbroker --storePathRootDir=$out/m --brokerIP1=127.0.0.1 --listenPort=$mport --haListenPort=$mha --namesrvListenPort=$ns --metricsAddr=127.0.0.1:$mm --brokerRole=${ROLE:-SYNC_MASTER} --flushDiskType=ASYNC_FLUSH --fastListenPort=0 --mappedFileSizeCommitLog=268435456 ${EXTRA:-} >$out/m.log 2>&1 &
mp=$!
wait_port $mport
$BIN/mqbroker --storePathRootDir=$out/s --brokerIP1=127.0.0.1 --listenPort=$sport --haListenPort=$(free_port) --namesrvEmbedded=false --fastListenPort=0 --metricsAddr=127.0.0.1:$sm --brokerRole=SLAVE --brokerId=1 --haMasterAddress=127.0.0.1:$mha --flushDiskType=ASYNC_FLUSH --mappedFileSizeCommitLog=268435456 ${EXTRA:-} >$out/s.log 2>&1 &
sp=$!
wait_port $sport
sleep 1
bin/mqbench produce --broker 127.0.0.1:$mport --topic HABench --queues 8 --create-topic --conns 1 --inflight 1 --size 1024 --duration ${DUR:-4s} --warmup 1s --progress never | tail -1 &
bp=$!
cp=()
if [ -n "${TRACE:-}" ]; then
sleep 2
curl -s -o $out/master.trace "http://127.0.0.1:$mm/debug/pprof/trace?seconds=1" &
cp+=($!)
curl -s -o $out/slave.trace "http://127.0.0.1:$sm/debug/pprof/trace?seconds=1" &
cp+=($!)
fi
wait $bp
for p in ${cp[@]+"${cp[@]}"}; do wait $p; done
kill $mp $sp; wait $mp $sp 2>/dev/null || true
