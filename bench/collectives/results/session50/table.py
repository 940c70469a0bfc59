"""Session 50's tables: 2 ranks beside vader and MPI tcp, then 8 and 16 ranks beside MPI tcp.
Usage: python3 table.py  (reads the files beside it)"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from tables import beside, print_many_ranks, two_rank_all_reduce

out = os.path.dirname(os.path.abspath(__file__))
rounds = (1, 2, 3)
print('size | vader | MPI tcp | rxccl in place | rxccl fresh | rx/vader (min-max) | rx/tcp (min-max)')
for s, v, t, x, xf in two_rank_all_reduce(out, rounds):
    print(f'{s} | {beside(v, t, x, xf)}')
print()
print_many_ranks(f'{out}/n', (8, 16), rounds)
