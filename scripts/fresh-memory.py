#!/usr/bin/env python3
"""What a page of new page cache costs this machine, the first time and when recycled.

A VM whose free memory goes back to its host (virtio-balloon free page reporting, e.g.
page_reporting.page_reporting_order on the kernel command line) backs that memory again on the next
touch, and the guest pays a host fault per page. A broker writing a new CommitLog takes every page of it
from free memory, so on such a machine its cost per message includes that fault; a long-running broker
whose page cache already fills the RAM recycles pages instead.

Three runs, each populating a new 2 GiB file for writing (MADV_POPULATE_WRITE, as the store's
prefaulter does) and then freeing its pages: the first takes free memory, the second (at once) the
pages the first freed, the third the same after a pause in which a reporting VM hands them back.

  scripts/fresh-memory.py [DIR] [PAUSE_SECONDS]
"""
import mmap
import os
import sys
import time

MADV_POPULATE_WRITE = 23  # Linux 5.14; Python's mmap module names it from 3.13 only
SIZE = 2 << 30


def populate(path):
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.posix_fallocate(fd, 0, SIZE)
        m = mmap.mmap(fd, SIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        t = time.perf_counter()
        m.madvise(MADV_POPULATE_WRITE)
        us = (time.perf_counter() - t) * 1e6 / (SIZE // mmap.PAGESIZE)
        m.close()
        os.ftruncate(fd, 0)  # frees the pages at once (nothing was written: no writeback)
        return us
    finally:
        os.close(fd)
        os.unlink(path)


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "/var/tmp"
    pause = float(sys.argv[2]) if len(sys.argv) > 2 else 10
    path = os.path.join(d, "fresh-memory.%d" % os.getpid())
    first = populate(path)
    again = populate(path)
    time.sleep(pause)
    later = populate(path)
    print("new page cache, us per 4 KiB page: free memory %.2f, just freed %.2f, after %gs idle %.2f"
          % (first, again, pause, later))


if __name__ == "__main__":
    main()
