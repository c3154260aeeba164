#!/usr/bin/env bash
# rounds.sh OUT ROUNDS VARIANTFILE: each line of VARIANTFILE is "label|env assignments|mqbench binary|flags";
# every round runs every variant once via sc.sh (interleaved).
set -uo pipefail
out=$1 rounds=$2 vf=$3
for r in $(seq 1 "$rounds"); do
  while IFS='|' read -r label envs bin flags; do
    [ -z "$label" ] && continue
    e=""; [ -n "$envs" ] && e="env $envs"
    printf '%-14s r%d ' "$label" "$r"
    ENVCMD="$e" ./sc.sh "$out" "$label/round-$r" "$bin" $flags 2>&1 | tr '\n' ' ' | sed 's/mqbench: mode=produce //; s/syscalls:sys_enter_//g; s/epoll_wait=0\/s //; s/getrusage=0\/s //; s/client_cpu_s=[0-9.]* //; s/client_cpu_share=[0-9.]* //'
    echo
  done <"$vf"
done
