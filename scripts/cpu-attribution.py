#!/usr/bin/env python3
"""Where the broker's CPU goes per message, from a Go CPU profile.

Usage: cpu-attribution.py BINARY PROFILE MSGS_IN_PROFILE_WINDOW [LABEL]

Reads `go tool pprof -traces` and puts every sample in the first bucket (top to bottom in BUCKETS) whose
pattern names a function anywhere on its stack, so a socket write made while answering counts as a socket
write, a clock read inside the put as a clock read. Prints one markdown row per bucket: share of the
sampled CPU and microseconds per message (sampled CPU / messages sent in the profile's window).
"""
import re
import subprocess
import sys

# (bucket, regex over the stack's function names); first match wins.
BUCKETS = [
    ("page cache: populating ahead (madvise)", r"store\.populate|\(\*commitLog\)\.prefault"),
    ("flush: msync / fdatasync / io_uring", r"flush\.\(\*periodic\)|\(\*GroupCommit\)\.syncer|SyncMapped|Fdatasync|commitAndSync"),
    ("socket write (answers)", r"unix\.write$|unix\.Writev|\(\*conn\)\.Write|\(\*conn\)\.Writev"),
    ("socket read + epoll", r"unix\.read$|unix\.Read$|EpollWait"),
    ("clock reads", r"^time\.Now$|time\.runtimeNow|runtime\.nanotime"),
    ("metrics (Prometheus, latency)", r"client_golang|requestMetrics|meteredStore\.observe|lockStats"),
    ("dispatch: IndexFile", r"\(\*indexService\)|\(\*indexFile\)"),
    ("dispatch: ConsumeQueue, listeners", r"\(\*dispatcher\)"),
    ("request decode (frame, JSON header, typed header)", r"codec\.DecodeRequestInto|decodeJSONHeader|RequestHeader\)\.DecodeFrom|codec\.decodeCommand"),
    ("answer encode", r"AppendResponseFrameHeader|answerStored|AppendOffsetMsgID"),
    ("store put: reserve, copy, publish", r"\(\*commitLog\)\.put$|\(\*commitLog\)\.putRecords|\(\*commitLog\)\.copyRecords|"
     r"\(\*commitLog\)\.publish|store\.\(\*Store\)\.(PutGroup|AddToGroup)$|store\.\(\*PutGroup\)\."),
    ("send path: checks, properties, encode", r"sendplane\.|store\.\(\*Store\)\.putMessage|codec\.EncodeRecord"),
    ("group commit hand-offs", r"flush\.\(\*GroupCommit\)"),
    ("event loop, framing", r"netio\.|gnet"),
    ("Go runtime: scheduler, GC", r"^runtime\."),
]


def traces(binary, profile):
    out = subprocess.run(["go", "tool", "pprof", "-traces", binary, profile], capture_output=True, text=True,
                         check=True).stdout
    for block in out.split("-----------+-------------------------------------------------------")[1:]:
        lines = [l for l in block.strip("\n").split("\n") if l.strip()]
        if not lines:
            continue
        m = re.match(r"\s*([\d.]+)(ms|s|us|µs)\s+(\S.*)", lines[0])
        if not m:
            continue
        val = float(m.group(1)) * {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}[m.group(2)]
        funcs = [m.group(3).strip()] + [l.strip() for l in lines[1:]]
        funcs = [re.sub(r"\s*\(inline\)$", "", f) for f in funcs]
        yield val, funcs


def main():
    binary, profile, msgs = sys.argv[1], sys.argv[2], float(sys.argv[3])
    label = sys.argv[4] if len(sys.argv) > 4 else profile
    sums = {name: 0.0 for name, _ in BUCKETS}
    sums["other"] = 0.0
    total = 0.0
    pats = [(name, re.compile(p)) for name, p in BUCKETS]
    for val, funcs in traces(binary, profile):
        total += val
        for name, pat in pats:
            if any(pat.search(f) for f in funcs):
                sums[name] += val
                break
        else:
            sums["other"] += val
    print(f"| {label} | share | µs per message |")
    print("| --- | ---: | ---: |")
    for name in [n for n, _ in BUCKETS] + ["other"]:
        if sums[name] > 0:
            print(f"| {name} | {100 * sums[name] / total:.1f} % | {sums[name] / msgs * 1e6:.2f} |")
    print(f"| **sampled CPU in all** | 100 % | **{total / msgs * 1e6:.2f}** |")


if __name__ == "__main__":
    main()
