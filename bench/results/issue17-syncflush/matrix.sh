#!/usr/bin/env bash
# Interleaved rounds of SYNC_FLUSH points (run.sh per point): the base build, this branch's build, and
# this branch's build with pre-writing off. The order of the three rotates from round to round.
# Usage: ROUNDS=3 matrix.sh OUTFILE
set -uo pipefail
here=$(dirname "$0")
out=$1
base=${BASE_BIN:-/tmp/base-bin} new=${NEW_BIN:-/tmp/pw2-bin}
mb128=134217728
variants=(base new new-noprewrite)
for r in $(seq "${ROUNDS:-3}"); do
  for shape in "1 1" "4 16" "16 32"; do
    for mode in mmap pool; do
      for backend in iouring fdatasync; do
        for i in 0 1 2; do
          v=${variants[$(( (i + r) % 3 ))]}
          case $v in
            base) "$here/run.sh" "$base" base $shape $mode $backend $mb128 ;;
            new) "$here/run.sh" "$new" new $shape $mode $backend $mb128 ;;
            new-noprewrite) "$here/run.sh" "$new" new-noprewrite $shape $mode $backend $mb128 --prewriteMappedFileEnable=false ;;
          esac | tee -a "$out"
        done
      done
    done
  done
done
