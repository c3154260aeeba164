#!/usr/bin/env python3
"""Medians per point and build of run.sh lines; ratios against base. Usage: summarize.py FILE..."""
import re, sys, statistics as st
from collections import defaultdict

rows = defaultdict(list)
for path in sys.argv[1:]:
    for line in open(path):
        if '|' not in line:
            continue
        head, bench, flush = [p.strip() for p in line.split('|')]
        h = head.split()
        build, shape, mode, backend = h[0], h[1], h[2], h[3]
        kv = dict(re.findall(r'(\w+)=([^\s]+)', bench + ' ' + flush))
        rows[(shape, mode, backend, build)].append(kv)

def med(runs, k):
    vals = [float(r[k]) for r in runs if r.get(k) not in (None, 'na', '')]
    return st.median(vals) if vals else float('nan')

points = sorted({k[:3] for k in rows}, key=lambda p: (int(p[0].split('x')[0]), p[1], p[2]))
print('| point | mode | backend | build | runs | msgs/s | p50 µs | p99 µs | p99.9 µs | acks/sync | ratio msgs/s | ratio p50 |')
print('|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|')
for p in points:
    base = rows.get(p + ('base',))
    for build in ('base', 'new', 'new-noprewrite'):
        runs = rows.get(p + (build,))
        if not runs:
            continue
        rate, p50 = med(runs, 'rate'), med(runs, 'p50_us')
        r_rate = r_p50 = ''
        if base and build != 'base':
            r_rate = f"{rate / med(base, 'rate'):.2f}"
            r_p50 = f"{p50 / med(base, 'p50_us'):.2f}"
        print(f"| {p[0]} | {p[1]} | {p[2]} | {build} | {len(runs)} | {rate:,.0f} | {p50:,.0f} | "
              f"{med(runs, 'p99_us'):,.0f} | {med(runs, 'p999_us'):,.0f} | {med(runs, 'acks_per_sync'):.1f} | {r_rate} | {r_p50} |")
