"""The many-ranks table of session 52: per (ranks, collective, size) Open MPI tcp's and rxccl's
times (medians over the rounds) and the median (min-max) of the same-round ratios.
Usage: python3 table.py [DIR]  (DIR: what rounds.sh wrote; default many/ beside it)"""
import os, re, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from tables import median, peer_times, ratio_text, ratios, reported, rxccl_times

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), 'many')
rounds = sorted({int(m.group(1)) for name in os.listdir(out) if (m := re.match(r'rx-\d+-r(\d+)\.txt$', name))})
mpi = peer_times(f'{out}/mpi.tsv')

print('| ranks | collective | size (B) | Open MPI tcp (us) | rxccl (us) | rxccl / MPI tcp, median (min-max) |')
print('|---|---|---:|---:|---:|---|')
for n in (8, 16, 32):
    rx = {r: {**rxccl_times(f'{out}/rx-{n}-r{r}.txt'), **rxccl_times(f'{out}/rx1m-{n}-r{r}.txt')} for r in rounds}
    for op, size in [(op, size) for op in ('allreduce', 'broadcast', 'allgather', 'barrier') for size in ((0,) if op == 'barrier' else (8, 1024))] + [('allreduce', 1048576)]:
        # An all-gather moves at least an element (4 B) per rank: its 8 B row is 4 B x ranks.
        mpi_size = max(size, 4 * n) if op == 'allgather' else size
        peer = [mpi.get(('mpi-tcp', n, op, mpi_size, f'r{r}')) for r in rounds]
        ours = [reported(rx[r].get((op, mpi_size))) for r in rounds]
        if ratios(ours, peer):
            print(f'| {n} | {op} | {size} | {median(peer):,.1f} | {median(ours):,.1f} | {ratio_text(ours, peer)} |')
