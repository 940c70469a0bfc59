"""The many-ranks table of session 52: per (ranks, collective, size) Open MPI tcp's and rxccl's
times (medians over the rounds) and the median (min-max) of the same-round ratios.
Usage: python3 table.py [DIR]  (DIR: what rounds.sh wrote; default many/ beside it)"""
import os, re, statistics, sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), 'many')
rounds = sorted({int(m.group(1)) for name in os.listdir(out) if (m := re.match(r'rx-\d+-r(\d+)\.txt$', name))})

mpi = {}
for line in open(f'{out}/mpi.tsv'):
    cells = line.rstrip('\n').split('\t')
    if not cells[0].startswith('#'):
        mpi[(int(cells[1]), cells[2], int(cells[3]), cells[10])] = float(cells[4])

def rxccl_times(path):
    """(op, size) -> microseconds: the in-place time, or the out-of-place one where a collective has
    no in-place form; of a block of several rows the first (a size run only to warm up) is left out."""
    blocks = []
    for line in open(path):
        block = re.match(r'# (\w+), \d+ ranks', line)
        cells = line.split()
        if block:
            blocks.append((block.group(1), []))
        elif blocks and len(cells) >= 13 and cells[0].isdigit():
            blocks[-1][1].append((int(cells[0]), float(cells[9] if cells[9] != '-' else cells[5])))
    times = {}
    for op, rows in blocks:
        for size, us in rows[1:] if len(rows) > 1 else rows:
            times.setdefault((op, size), us)
    return times

print('| ranks | collective | size (B) | Open MPI tcp (us) | rxccl (us) | rxccl / MPI tcp, median (min-max) |')
print('|---|---|---:|---:|---:|---|')
for n in (8, 16, 32):
    rx = {r: {**rxccl_times(f'{out}/rx-{n}-r{r}.txt'), **rxccl_times(f'{out}/rx1m-{n}-r{r}.txt')} for r in rounds}
    for op, size in [(op, size) for op in ('allreduce', 'broadcast', 'allgather', 'barrier') for size in ((0,) if op == 'barrier' else (8, 1024))] + [('allreduce', 1048576)]:
        # An all-gather moves at least an element (4 B) per rank: its 8 B row is 4 B x ranks.
        mpi_size = max(size, 4 * n) if op == 'allgather' else size
        peer = [mpi.get((n, op, mpi_size, f'r{r}')) for r in rounds]
        ours = [rx[r].get((op, mpi_size)) for r in rounds]
        ratios = [a / b for a, b in zip(ours, peer) if a and b]
        if not ratios:
            continue
        print(f'| {n} | {op} | {size} | {statistics.median([p for p in peer if p]):,.1f} | {statistics.median([o for o in ours if o]):,.1f} | '
              f'{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |')
