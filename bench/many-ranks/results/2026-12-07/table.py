"""Pools every round of every run here per (ranks, collective, size, row) and prints bench/README.md's
"Oversubscribed hosts" table: python3 table.py (in this folder). The runs were printed by the first
form of bench/many-ranks/rows.ts ("W=8 allReduce 8 recursive-doubling median ... rounds ...")."""
import re
import statistics as st

FILES = ['rows8.txt', 'rows-both.txt', 'rows16.txt', 'cpu-rows.txt', 'focus.txt', 'focus16.txt']
ORDER = ['allReduce', 'allGather', 'broadcast', 'barrier']
NAMES = {'allReduce': 'all-reduce', 'allGather': 'all-gather', 'broadcast': 'broadcast', 'barrier': 'barrier'}
# The row `auto` takes on one 2-core host (the cost model as it is), and where the messages term (branch wt-cost-term) moves it.
NOW = {4: {'allReduce': 'all-pairs', 'allGather': 'pairwise', 'broadcast': 'pairwise', 'barrier': 'pairwise'},
       8: {'allReduce': 'recursive-doubling', 'allGather': 'pairwise', 'broadcast': 'pairwise', 'barrier': 'dissemination'},
       16: {'allReduce': 'recursive-doubling', 'allGather': 'bruck', 'broadcast': 'binomial', 'barrier': 'dissemination'}}
TERM = {(4, 'allReduce', 8): 'recursive-doubling', (4, 'allReduce', 1024): 'recursive-doubling', (4, 'barrier', 0): 'dissemination',
        (8, 'allGather', 8): 'bruck', (8, 'allGather', 1024): 'bruck'}

pool = {}
for name in FILES:
    for line in open(name):
        m = re.search(r'W=(\d+) (\w+) (\d+) ([\w-]+)\s+median\s+(\d+) us.*rounds ([\d ]+?)\s+\(auto', line)
        if m:
            ranks, collective, size, row, _, rounds = m.groups()
            pool.setdefault((int(ranks), collective, int(size)), {}).setdefault(row, []).extend(int(x) for x in rounds.split())

print('| ranks | collective | size | each row: median µs per call (rounds) | model now | best measured | now / best | with the messages term | term / now |')
print('|---|---|---|---|---|---|---|---|---|')
for key in sorted(pool, key=lambda k: (k[0], ORDER.index(k[1]), k[2])):
    ranks, collective, size = key
    medians = {row: st.median(values) for row, values in pool[key].items()}
    best = min(medians, key=medians.get)
    now = NOW[ranks][collective]
    term = TERM.get(key, now)
    cells = ', '.join(f'{row} {medians[row]:.0f} ({len(pool[key][row])})' for row in pool[key])
    shown = '-' if collective == 'barrier' else ('8 B' if size == 8 else '1 KiB')
    print(f"| {ranks} | {NAMES[collective]} | {shown} | {cells} | {now} | {best} | {medians[now] / medians[best]:.2f} | {term if term != now else 'unchanged'} | {medians[term] / medians[now]:.2f} |")
