import re, sys, statistics
def parse(path):
    evs=[]; cur=None
    for line in open(path):
        if line.startswith('M='):
            m = re.match(r'M=(-?\d+) P=(-?\d+) G=(-?\d+) StateTransition Time=(\d+) GoID=(\d+) (\S+) Reason="([^"]*)"', line)
            cur = [int(m.group(4)), int(m.group(5)), m.group(6), []] if m else None
            if cur: evs.append(cur)
        elif cur is not None and line.startswith('\t') and not line.startswith('\t\t'):
            cur[3].append(line.strip().split(' @ ')[0].split('/')[-1])
    return evs
M = parse(sys.argv[1]); S = parse(sys.argv[2])
def gid_with(evs, fn):
    for e in evs:
        if any(fn in f for f in e[3]): return e[1]
W = gid_with(M, 'writeLoop'); R = gid_with(M, 'readLoop'); C = gid_with(S, 'readFrames')
L = gid_with(M, 'eventloop).read') or gid_with(M, 'orbit')
print("writer", W, "reader", R, "client", C, "loop", L)
def g(evs, gid): return [e for e in evs if e[1] == gid]
w, r, c, l = g(M, W), g(M, R), g(S, C), g(M, L)
def first(lst, t, pred):
    for e in lst:
        if e[0] >= t and pred(e): return e
    return None
rows = []
for i, e in enumerate(w):
    if e[2] != 'Waiting->Runnable': continue
    wake = e[0]
    ws = first(w, wake, lambda x: x[2] == 'Running->Syscall')
    if not ws: break
    wr = first(w, ws[0], lambda x: x[2] == 'Syscall->Running')
    sw = first(c, ws[0], lambda x: x[2] == 'Waiting->Runnable')
    if not sw: break
    sr = first(c, sw[0], lambda x: x[2] == 'Runnable->Running')
    if not sr: break
    srep = first(c, sr[0], lambda x: x[2] == 'Running->Syscall' and any('report' in f for f in x[3]))
    if not srep: break
    srepd = first(c, srep[0], lambda x: x[2] == 'Syscall->Running')
    rw = first(r, srep[0], lambda x: x[2] == 'Waiting->Runnable')
    if not rw: break
    rr = first(r, rw[0], lambda x: x[2] == 'Runnable->Running')
    if not rr: break
    rt = first(r, rr[0], lambda x: x[2] == 'Running->Syscall' and any('Trigger' in f for f in x[3]))
    if not rt: break
    lw = first(l, rt[0], lambda x: x[2] == 'Running->Syscall' and x[3] and any(f.endswith('.write') or 'Writev' in f or 'writev' in f for f in x[3][:2]))
    if not lw: break
    rows.append([ws[0]-wake, wr[0]-ws[0], sw[0]-wr[0], sr[0]-sw[0], srep[0]-sr[0], srepd[0]-srep[0], rw[0]-srepd[0], rr[0]-rw[0], rt[0]-rr[0], lw[0]-rt[0], lw[0]-wake])
names = ["wake->writev", "writev", "writev end->slave wake", "slave wake->run", "slave run->report", "report write", "report end->master reader wake", "reader wake->run", "reader run->kick", "kick->loop reply write", "total notify->reply"]
print(len(rows), "cycles")
for i, n in enumerate(names):
    v = sorted(x[i] for x in rows if x[i] >= 0)
    print(f"{n:32s} p50 {statistics.median(v)/1000:7.1f} us  p90 {v[int(len(v)*0.9)]/1000:7.1f}")
