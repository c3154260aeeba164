#!/usr/bin/env bash
# The final build (pre-writing, syncs from Submit and the syncer, no commit wake while waiters queue)
# against base, and with pre-writing off: the pool/fdatasync and mmap/fdatasync points, 3 rounds.
set -uo pipefail
here=$(dirname "$0"); base=/tmp/base-bin new=${NEW_BIN:-/tmp/pw3-bin} mb128=134217728
variants=(base new new-noprewrite)
for r in 1 2 3; do
  for shape in "1 1" "4 16" "16 32"; do
    for mode in pool mmap; do
      for i in 0 1 2; do
        v=${variants[$(( (i + r) % 3 ))]}
        case $v in
          base) "$here/run.sh" $base base $shape $mode fdatasync $mb128 ;;
          new) "$here/run.sh" $new new $shape $mode fdatasync $mb128 ;;
          new-noprewrite) "$here/run.sh" $new new-noprewrite $shape $mode fdatasync $mb128 --prewriteMappedFileEnable=false ;;
        esac
      done
    done
  done
done
