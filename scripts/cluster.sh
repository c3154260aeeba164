#!/usr/bin/env bash
# A local RocketMQ-style cluster on 127.0.0.1, in one command (make cluster): one name server and two
# brokerNames, each a master with one slave, stores under $DATA/cluster/<broker>. Ctrl-C stops them all.
#
#   name server  127.0.0.1:9876
#   broker-a     master 10911 (HA 10912, metrics 9106)    slave 10921 (HA 10922, metrics 9107)
#   broker-b     master 10931 (HA 10932, metrics 9108)    slave 10941 (HA 10942, metrics 9109)
#
# ROLE=SYNC_MASTER makes both masters answer a send only once their slave has it (default ASYNC_MASTER).
# Producers and consumers use namesrvAddr 127.0.0.1:9876. Logs: $DATA/cluster/<broker>.log.
#
# CONTROLLER=1: controller mode (automatic failover). Three name servers, each embedding a controller
# (enableControllerInNamesrv; raft on 9878/9868/9858), and the same two broker groups of two replicas in
# enableControllerMode: the controller makes one replica of each group master (SYNC: a send waits for
# every in-sync replica) and elects the other when it dies.
#
#   name servers 127.0.0.1:9876, 127.0.0.1:9866, 127.0.0.1:9856 (controllers on the same ports)
#   broker-a     replicas 10911 and 10921      broker-b     replicas 10931 and 10941
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
DATA=${DATA:-./data}
ROLE=${ROLE:-ASYNC_MASTER}
root="$DATA/cluster"
mkdir -p "$root"

pids=()
stop() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop INT TERM EXIT

CONTROLLER=${CONTROLLER:-}
namesrvs=127.0.0.1:9876
if [ -n "$CONTROLLER" ]; then
  namesrvs="127.0.0.1:9876;127.0.0.1:9866;127.0.0.1:9856"
  peers="n0-127.0.0.1:9878;n1-127.0.0.1:9868;n2-127.0.0.1:9858"
  for i in 0 1 2; do
    port=$((9876 - 10 * i)) dir="$root/namesrv-n$i"
    mkdir -p "$dir"
    cat >"$dir/namesrv.conf" <<CONF
listenPort=$port
metricsAddr=off
enableControllerInNamesrv=true
controllerPeers=$peers
controllerSelfId=n$i
controllerStorePath=$dir/controller
CONF
    "$BIN/mqnamesrv" -c "$dir/namesrv.conf" >"$root/namesrv-n$i.log" 2>&1 &
    pids+=($!)
  done
else
  "$BIN/mqnamesrv" --listenPort 9876 >"$root/namesrv.log" 2>&1 &
  pids+=($!)
fi

# broker NAME ID ROLE PORT METRICS_PORT [MASTER_HA_PORT]: a slave names its master's HA port, so that it
# does not wait for the next registration round (30 s) to learn it when it registered before its master.
# Each broker needs its own metrics port (metricsAddr defaults to 127.0.0.1:9106).
broker() {
  local name=$1 id=$2 role=$3 port=$4 metrics=$5 master=${6:-} dir="$root/$1-$2"
  mkdir -p "$dir"
  cat >"$dir/broker.conf" <<CONF
brokerClusterName=LocalCluster
brokerName=$name
brokerId=$id
brokerRole=$role
brokerIP1=127.0.0.1
listenPort=$port
haListenPort=$((port + 1))
metricsAddr=127.0.0.1:$metrics
namesrvAddr=127.0.0.1:9876
namesrvEmbedded=false
storePathRootDir=$dir/store
${master:+haMasterAddress=127.0.0.1:$master}
CONF
  "$BIN/mqbroker" -c "$dir/broker.conf" >"$root/$name-$id.log" 2>&1 &
  pids+=($!)
}
# replica NAME N PORT METRICS_PORT: a broker in controller mode (its role and brokerId come from the
# controller; the store keeps them across restarts).
replica() {
  local name=$1 n=$2 port=$3 metrics=$4 dir="$root/$1-r$2"
  mkdir -p "$dir"
  cat >"$dir/broker.conf" <<CONF
brokerClusterName=LocalCluster
brokerName=$name
brokerIP1=127.0.0.1
listenPort=$port
haListenPort=$((port + 1))
metricsAddr=127.0.0.1:$metrics
namesrvAddr=$namesrvs
namesrvEmbedded=false
enableControllerMode=true
controllerAddr=$namesrvs
storePathRootDir=$dir/store
CONF
  "$BIN/mqbroker" -c "$dir/broker.conf" >"$root/$name-r$n.log" 2>&1 &
  pids+=($!)
}
if [ -n "$CONTROLLER" ]; then
  replica broker-a 0 10911 9106
  replica broker-a 1 10921 9107
  replica broker-b 0 10931 9108
  replica broker-b 1 10941 9109
  echo "cluster LocalCluster in controller mode: name servers and controllers $namesrvs;" \
    "broker-a replicas 10911 and 10921, broker-b replicas 10931 and 10941"
  echo "mqadmin getSyncStateSet -a 127.0.0.1:9876 -b broker-a shows who is master; kill one and watch the other take over"
else
  broker broker-a 0 "$ROLE" 10911 9106
  broker broker-a 1 SLAVE 10921 9107 10912
  broker broker-b 0 "$ROLE" 10931 9108
  broker broker-b 1 SLAVE 10941 9109 10932
  echo "cluster LocalCluster: name server 127.0.0.1:9876; broker-a 10911 (+slave 10921), broker-b 10931 (+slave 10941)"
fi
echo "stores and logs under $root; Ctrl-C stops everything"
if [ -n "$CONTROLLER" ]; then
  # Killing a broker or a name server is the point of this mode: the rest keep running until Ctrl-C.
  wait "${pids[@]}" || true
else
  wait -n "${pids[@]}" || true
  echo "a process of the cluster exited; stopping the rest (see the logs under $root)" >&2
fi
