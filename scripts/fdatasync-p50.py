#!/usr/bin/env python3
"""The disk's floor for a durable send: a 4 KiB pwrite + fdatasync on a pre-written file, one at a time.

Usage: fdatasync-p50.py DIR [COUNT]   (DIR on the same filesystem as the broker's store)

fio's `--rw=write --bs=4k --fdatasync=1` on a pre-written file, without fio: the file is written whole and
synced first (so no write allocates blocks or converts extents), then COUNT sequential 4 KiB writes each
followed by fdatasync. Prints p50, p90, p99 (µs) and the rate.
"""
import os
import sys
import time

size, block = 64 << 20, 4096
path = os.path.join(sys.argv[1], "fdatasync-p50.tmp")
count = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
try:
    zeros = bytes(1 << 20)
    for off in range(0, size, len(zeros)):
        os.pwrite(fd, zeros, off)
    os.fsync(fd)
    buf = os.urandom(block)
    lat = []
    start = time.perf_counter_ns()
    for i in range(count):
        t0 = time.perf_counter_ns()
        os.pwrite(fd, buf, (i * block) % size)
        os.fdatasync(fd)
        lat.append((time.perf_counter_ns() - t0) / 1000)
    secs = (time.perf_counter_ns() - start) / 1e9
    lat.sort()
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
    print(f"fdatasync 4KiB: n={count} p50_us={q(0.50):.1f} p90_us={q(0.90):.1f} p99_us={q(0.99):.1f} rate={count / secs:.0f}/s")
finally:
    os.close(fd)
    os.unlink(path)
