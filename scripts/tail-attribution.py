#!/usr/bin/env python3
"""Which share of the slow sends each cause explains (issue 17 item 1).

Reads run directories written by `ATTRIBUTE=1 scripts/tail-probe.sh`:
  slow.txt             mqbench --slow-log: "intended_ns sent_ns done_ns" per send at least --slow-threshold late
  run.json             mqbench's run record (total sends, p50)
  broker-hiccups.txt   the broker's /debug/hiccups (hiccupMeterInterval): "start_ns late_ns" per stall >= 1 ms
  client-hiccups.txt   mqbench --hiccup-log: the generator's own stalls, same format
  steal.txt            "unix_ns steal_ticks busy_ticks" every ~10 ms from /proc/stat (all CPUs)

A send waits from its intended time to its answer. Each stall overlapping that interval delayed it by at
most the overlap. A slow send is put down to the cause whose overlap is largest, if that overlap covers
at least half of its excess over the run's median; otherwise to "none of these" (time inside the broker's
own work: queueing behind other sends, the store, the event loop). Causes:
  broker stall    the broker's sleeper woke late: the broker process could not run (vCPU stolen by the
                  host, the OS running something else, a GC stop-the-world, no free P)
  client stall    the same seen by mqbench's sleeper: the generator could not send or read in time
  steal only      no sleeper saw it, but /proc/stat counted stolen time in the window (coarse: 10 ms ticks)
Usage: tail-attribution.py RUN_DIR [RUN_DIR...]   (prints one table row per run and the pooled shares)
"""
import bisect
import gzip
import json
import os
import sys

CAUSES = ("broker stall", "client stall", "steal only", "none of these")


def read_pairs(path):
    out = []
    if not os.path.exists(path):
        return out
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        a, b = line.split()[:2]
        out.append((int(a), int(a) + int(b)))
    out.sort()
    return out


def overlap(intervals, starts, lo, hi):
    """Total length of intervals (sorted by start, non-nested enough) overlapping [lo, hi)."""
    total = 0
    i = max(bisect.bisect_right(starts, lo) - 1, 0)
    while i < len(intervals) and intervals[i][0] < hi:
        s, e = intervals[i]
        total += max(0, min(e, hi) - max(s, lo))
        i += 1
    return total


def steal_intervals(path, ncpu):
    """Stolen time per sample window, as intervals ending at the window's end (length = stolen/ncpu)."""
    rows = []
    if not os.path.exists(path):
        return rows
    prev = None
    tick_ns = 1e9 / os.sysconf("SC_CLK_TCK")
    for line in open(path):
        t, steal = (int(x) for x in line.split()[:2])
        if prev is not None and steal > prev[1]:
            stolen = (steal - prev[1]) * tick_ns / ncpu
            rows.append((int(t - stolen), t))
        prev = (t, steal)
    return rows


def attribute(run_dir):
    rec = json.load(open(os.path.join(run_dir, "run.json")))
    res = list(rec["results"].values())[0]
    ncpu = rec.get("machine", {}).get("nproc", os.cpu_count())
    p50_ns = res["latency"]["p50_us"] * 1e3
    sends = res["acked"] + res.get("errors", 0)
    broker = read_pairs(os.path.join(run_dir, "broker-hiccups.txt"))
    client = read_pairs(os.path.join(run_dir, "client-hiccups.txt"))
    steal = steal_intervals(os.path.join(run_dir, "steal.txt"), ncpu)
    sources = [(name, iv, [s for s, _ in iv]) for name, iv in
               (("broker stall", broker), ("client stall", client), ("steal only", steal))]
    counts = {}  # threshold label -> cause -> n
    thresholds = (("≥ 1 ms", 1e6), ("≥ 10 ms", 10e6))
    for label, _ in thresholds:
        counts[label] = dict.fromkeys(CAUSES, 0)
    slow = os.path.join(run_dir, "slow.txt")
    for line in (open(slow) if os.path.exists(slow) else gzip.open(slow + ".gz", "rt")):  # kept gzipped in results
        if line.startswith("#") or not line.strip():
            continue
        intended, _sent, done = (int(x) for x in line.split()[:3])
        lat = done - intended
        excess = max(lat - p50_ns, 1)
        best, best_ov = "none of these", 0
        for name, iv, starts in sources:
            ov = overlap(iv, starts, intended, done)
            if ov > best_ov:
                best, best_ov = name, ov
        cause = best if best_ov >= excess / 2 else "none of these"
        for label, th in thresholds:
            if lat >= th:
                counts[label][cause] += 1
    stalls = {"broker": broker, "client": client}
    return rec.get("name", run_dir), sends, counts, stalls


def main(dirs):
    pooled = {}
    print("| run | sends | slow sends | " + " | ".join(CAUSES) + " | broker stalls ≥ 1 ms (sum) | client stalls ≥ 1 ms (sum) |")
    print("|---|---:|---|" + "---:|" * len(CAUSES) + "---:|---:|")
    for d in dirs:
        name, sends, counts, stalls = attribute(d)
        for label, by in counts.items():
            n = sum(by.values())
            pool = pooled.setdefault(label, dict.fromkeys(CAUSES, 0))
            for c in CAUSES:
                pool[c] += by[c]
            shares = " | ".join(f"{100 * by[c] / n:.0f} %" if n else "–" for c in CAUSES)
            st = " | ".join(f"{len(v)} ({sum(e - s for s, e in v) / 1e6:.0f} ms)" for v in stalls.values())
            print(f"| {name} {os.path.basename(os.path.normpath(d))} | {sends} | {n} {label} | {shares} | {st} |")
    for label, by in pooled.items():
        n = sum(by.values())
        shares = " | ".join(f"{100 * by[c] / n:.0f} %" if n else "–" for c in CAUSES)
        print(f"| **all runs** | | {n} {label} | {shares} | | |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
