"""Session 54's tables: python3 bench/collectives/results/session54/table.py DIR (what rounds.sh wrote)."""
import re, statistics, sys
from pathlib import Path

out = Path(sys.argv[1])

def in_place(path):
    """{(op, bytes): in-place us} of one rxccl bench output; a size met twice keeps the later (warm) row."""
    rows, op = {}, None
    for line in path.read_text().splitlines():
        heading = re.match(r'# (\w+), \d+ ranks', line)
        if heading:
            op = heading.group(1)
            continue
        cells = line.split()
        if op and len(cells) >= 10 and cells[0].isdigit():
            rows[(op, int(cells[0]))] = float(cells[9] if cells[9] != '-' else cells[5])
    return rows

print('# in place, us, median of 3 rounds (each round\'s value): ring (main) against chain (wt-chain-agreement)')
for n in (2, 8):
    runs = {side: [in_place(out / f'{side}-{n}-r{r}.txt') for r in (1, 2, 3)] for side in ('ring', 'chain')}
    for key in sorted(runs['ring'][0]):
        ring, chain = ([run[key] for run in runs[side]] for side in ('ring', 'chain'))
        print(f'{n} ranks {key[0]} {key[1]} B: ring {statistics.median(ring):.1f} {ring}  chain {statistics.median(chain):.1f} {chain}')

mpi = {}
for line in (out / 'bcast-mpi.tsv').read_text().splitlines():
    cells = line.split('\t')
    mpi[(int(cells[3]), cells[10])] = float(cells[4])
print('# broadcast, 8 ranks, in place: Open MPI tcp, ring, chain (us, medians), then same-round ratios to Open MPI tcp')
for size in (8, 1024):
    rows = []
    for r in (1, 2, 3):
        ring, chain = (in_place(out / f'bcast-{side}-8-r{r}.txt')[('broadcast', size)] for side in ('ring', 'chain'))
        peer = mpi[(size, f'r{r}')]
        rows.append((peer, ring, chain, ring / peer, chain / peer))
    medians = [statistics.median(row[i] for row in rows) for i in range(5)]
    print(f'{size} B: mpi {medians[0]:.1f} ring {medians[1]:.1f} chain {medians[2]:.1f} | ring/mpi {medians[3]:.2f} {[round(row[3], 2) for row in rows]} chain/mpi {medians[4]:.2f} {[round(row[4], 2) for row in rows]}')
