"""Same-round ratios of rounds.sh's output: python3 table.py OUT label [label ...]
Per (op, ranks, size): each build's median time (us, out of place: both peers' calls are), Open
MPI's (vader, tcp), and the median (min-max) over rounds of build / vader and build / tcp; with
two labels also the median (min-max) of the second over the first, same round."""
import glob, re, statistics as st, sys

out, labels = sys.argv[1], sys.argv[2:]
mpi = {}
for line in open(f'{out}/mpi.tsv'):
    f = line.rstrip('\n').split('\t')
    if f[0].startswith('#'): continue
    mpi[(f[0], int(f[1]), f[2], int(f[3]), f[10])] = float(f[4])

def rx(path):
    rows, cur = {}, None
    for line in open(path):
        m = re.match(r'# (\w+), (\d+) ranks', line)
        if m: cur = m.group(1); continue
        f = line.split()
        if len(f) >= 13 and f[0].isdigit() and (cur, int(f[0])) not in rows:
            rows[(cur, int(f[0]))] = float(f[5])
    return rows

rounds = sorted({int(m.group(1)) for p in glob.glob(f'{out}/rx-*-r*.txt') for m in [re.search(r'-r(\d+)\.txt$', p)]})
med = lambda l: st.median(l) if l else float('nan')
span = lambda l: f'{med(l):.2f} ({min(l):.2f}-{max(l):.2f})' if l else '-'
sizes = [s for s in (262144, 524288, 1048576, 2097152, 4194304) if any(k[3] == s for k in mpi)] if '--all' not in labels else sorted({k[3] for k in mpi})
labels = [l for l in labels if l != '--all']
for op in ('broadcast', 'allgather'):
    for n in (2, 4):
        R = {l: {r: rx(f'{out}/rx-{l}-{n}-r{r}.txt') for r in rounds if glob.glob(f'{out}/rx-{l}-{n}-r{r}.txt')} for l in labels}
        head = ['size', 'vader', 'MPI tcp'] + labels + [f'{l} / vader' for l in labels] + [f'{l} / MPI tcp' for l in labels]
        if len(labels) == 2: head.append(f'{labels[1]} / {labels[0]}')
        print(f'\n{op}, {n} ranks (us; ratios: median (min-max) of same-round ratios, {len(rounds)} rounds)\n')
        print('| ' + ' | '.join(head) + ' |'); print('|' + '---|' * len(head))
        for s in sizes:
            v = {r: mpi.get(('mpi-shm', n, op, s, f'r{r}')) for r in rounds}
            t = {r: mpi.get(('mpi-tcp', n, op, s, f'r{r}')) for r in rounds}
            x = {l: {r: R[l][r].get((op, s)) for r in R[l]} for l in labels}
            cells = [f'{s // 1024} KiB', f'{med([q for q in v.values() if q]):,.0f}', f'{med([q for q in t.values() if q]):,.0f}']
            cells += [f'{med([q for q in x[l].values() if q]):,.0f}' for l in labels]
            for ref in (v, t):
                cells += [span([x[l][r] / ref[r] for r in x[l] if x[l][r] and ref.get(r)]) for l in labels]
            if len(labels) == 2:
                a, b = x[labels[0]], x[labels[1]]
                cells.append(span([b[r] / a[r] for r in a if a[r] and b.get(r)]))
            print('| ' + ' | '.join(cells) + ' |')
