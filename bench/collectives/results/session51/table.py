"""Session 51's tables: 2 ranks beside vader and MPI tcp, 4-rank broadcast and all-gather beside
both, then 8 and 16 ranks beside MPI tcp.
Usage: python3 table.py [DIR]  (DIR: what rounds.sh wrote; default this folder)"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from tables import beside, peer_times, print_many_ranks, rxccl_times, two_rank_all_reduce

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rounds = (1, 2, 3)
print('size | vader | MPI tcp | rxccl in place | rxccl fresh | rx/vader (min-max) | rx/tcp (min-max)')
for s, v, t, x, xf in two_rank_all_reduce(out, rounds):
    print(f'{s} | {beside(v, t, x, xf)}')
print()
# 4 ranks: broadcast and all-gather beside vader and MPI tcp (rxccl in place where it has the form)
m4 = peer_times(f'{out}/mpi4.tsv')
R4 = {r: rxccl_times(f'{out}/rx4-r{r}.txt') for r in rounds}
print('4 ranks op size | vader | MPI tcp | rxccl | rx/vader (min-max) | rx/tcp (min-max)')
for op in ('broadcast', 'allgather'):
    for s in (262144, 1048576, 4194304):
        v = [m4.get(('mpi-shm', 4, op, s, f'r{r}')) for r in rounds]
        t = [m4.get(('mpi-tcp', 4, op, s, f'r{r}')) for r in rounds]
        x = [R4[r].get((op, s), (None, None))[1] for r in rounds]
        print(f'{op} {s} | {beside(v, t, x)}')
print()
print_many_ranks(f'{out}/n', (8, 16), rounds)
