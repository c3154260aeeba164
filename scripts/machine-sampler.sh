#!/bin/bash
# Every 100 ms until killed: unix time, Dirty kB, Writeback kB, MB written and read on vda since boot, busy, idle and
# steal ticks since boot (/proc/meminfo, /proc/diskstats, /proc/stat). DEV=sdb for another disk.
while :; do
  t=$(date +%s.%N)
  d=$(awk '/^Dirty:/{d=$2}/^Writeback:/{w=$2}END{print d, w}' /proc/meminfo)
  io=$(awk -v dev="${DEV:-vda}" '$3==dev{print int($10*512/1048576), int($6*512/1048576)}' /proc/diskstats)
  c=$(head -1 /proc/stat | awk '{print $2+$3+$4+$7+$8, $5+$6, $9}')
  echo "$t $d $io $c"
  sleep 0.1
done
