#!/usr/bin/env bash
# Base against the branch's last build (/tmp/pw4-bin), pool + fdatasync, 3 interleaved rounds.
set -uo pipefail
here=$(dirname "$0"); mb128=134217728
for r in 1 2 3; do
  for shape in "1 1" "4 16" "16 32"; do
    if (( r % 2 )); then order="base new"; else order="new base"; fi
    for b in $order; do
      bin=/tmp/base-bin; [[ $b == new ]] && bin=/tmp/pw4-bin
      "$here/run.sh" $bin $b $shape pool fdatasync $mb128
    done
  done
done
