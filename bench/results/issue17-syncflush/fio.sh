#!/usr/bin/env bash
# 4 KiB write + fdatasync on a pre-written file and on a fallocated, never-written one (ext4, /work).
set -eu
d=${WORKDIR:-/work/pwbench}; mkdir -p "$d"
rm -f "$d/pre.dat" "$d/falloc.dat"
dd if=/dev/zero of="$d/pre.dat" bs=1M count=128 conv=fdatasync status=none
fallocate -l 128M "$d/falloc.dat"; sync
for f in pre falloc; do
  echo "== $f ($(cut -d' ' -f1-3 /proc/loadavg))"
  fio --name="$f" --filename="$d/$f.dat" --size=128m --rw=write --bs=4k --ioengine=psync --fdatasync=1 \
    --runtime=4 --time_based=0 --overwrite=1 --output-format=normal 2>&1 | grep -E "IOPS|sync \(usec\)|sync percentiles|50.00th|99.00th|99.90th" | head -8
done
rm -f "$d/pre.dat" "$d/falloc.dat"
