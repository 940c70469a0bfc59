"""Session 54's tables: python3 bench/collectives/results/session54/table.py DIR (what rounds.sh wrote)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from tables import median, peer_times, ratio_text, reported, rxccl_times  # noqa: E402

out = sys.argv[1]
ROUNDS = (1, 2, 3)

print("# in place (barrier: out of place), us, median of 3 rounds (each round's value): ring (main) against chain (wt-chain-agreement)")
for n in (2, 8):
    runs = {side: [rxccl_times(f'{out}/{side}-{n}-r{r}.txt') for r in ROUNDS] for side in ('ring', 'chain')}
    for key in sorted(runs['ring'][0]):
        ring, chain = ([reported(run[key]) for run in runs[side]] for side in ('ring', 'chain'))
        print(f'{n} ranks {key[0]} {key[1]} B: ring {median(ring):.1f} {ring}  chain {median(chain):.1f} {chain}')

mpi = peer_times(f'{out}/bcast-mpi.tsv')
print('# broadcast, 8 ranks, in place: Open MPI tcp, ring, chain (us, medians), then median (min-max) of same-round ratios to Open MPI tcp')
for size in (8, 1024):
    peer = [mpi[('mpi-tcp', 8, 'broadcast', size, f'r{r}')] for r in ROUNDS]
    ring, chain = ([reported(rxccl_times(f'{out}/bcast-{side}-8-r{r}.txt')[('broadcast', size)]) for r in ROUNDS] for side in ('ring', 'chain'))
    print(f'{size} B: mpi {median(peer):.1f} ring {median(ring):.1f} chain {median(chain):.1f} | ring/mpi {ratio_text(ring, peer)} chain/mpi {ratio_text(chain, peer)}')
