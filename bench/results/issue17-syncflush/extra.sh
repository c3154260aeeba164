#!/usr/bin/env bash
# The default 1 GiB CommitLog files (4 x 16, pool, fdatasync; the first files prepared for 3 s, or for 15 s),
# and the msync backend once (mmap, 1 x 1 and 4 x 16).
set -uo pipefail
here=$(dirname "$0"); base=/tmp/base-bin new=/tmp/pw2-bin gib=1073741824 mb128=134217728
for r in 1 2; do
  "$here/run.sh" $base base 4 16 pool fdatasync $gib
  "$here/run.sh" $new new 4 16 pool fdatasync $gib
  "$here/run.sh" $new new-noprewrite 4 16 pool fdatasync $gib --prewriteMappedFileEnable=false
done | tee -a "$here/gib.txt"
for b in base new; do
  bin=$base; [[ $b == new ]] && bin=$new
  SETTLE=15 "$here/run.sh" $bin $b-settle15s 4 16 pool fdatasync $gib
done | tee -a "$here/gib.txt"
for shape in "1 1" "4 16"; do
  "$here/run.sh" $base base $shape mmap msync $mb128
  "$here/run.sh" $new new $shape mmap msync $mb128
done | tee -a "$here/msync.txt"
