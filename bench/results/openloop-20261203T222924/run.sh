#!/usr/bin/env bash
# run.sh OUTDIR LABEL MQBENCH [mqbench produce flags...]: one fresh broker (temp store, 128 MiB CommitLog
# files) on 127.0.0.1, one mqbench produce run against it, the broker stopped and its store removed.
set -euo pipefail
out=$1 label=$2 mqbench=$3; shift 3
broker=${BROKER:-/tmp/ol-base/bin/mqbroker}
py=$(python3 -c 'import sys; print(sys.executable)')
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }
port=$(free_port); nport=$(free_port)
store=$(mktemp -d /tmp/olstore.XXXXXX)
dir="$out/$label"; mkdir -p "$dir"
"$broker" --storePathRootDir="$store" --listenPort="$port" --namesrvListenPort="$nport" --fastListenPort=0 \
  --mappedFileSizeCommitLog=134217728 >"$dir/broker.log" 2>&1 &
bpid=$!
trap 'kill -INT $bpid 2>/dev/null; wait $bpid 2>/dev/null; rm -rf "$store"' EXIT
wait_port "$port" || { echo "broker did not start" >&2; exit 1; }
"$mqbench" produce --broker "127.0.0.1:$port" --create-topic --queues 8 --size 1024 --progress never \
  --name "$label" --out "$dir" --disk-path "$store" "$@" >"$dir/mqbench.txt" 2>&1 || echo "mqbench $label failed" >&2
grep '^mqbench:' "$dir/mqbench.txt" | tail -1
