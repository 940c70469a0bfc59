"""What every results folder's table.py reads, written once: Open MPI's rows (mpi_bench.c's TSV),
rxccl bench's rows, and a ratio as the median (min-max) of same-round ratios.
A folder's table.py imports it: sys.path.insert(0, <this folder>); from tables import ..."""
import re
import statistics


def peer_times(path):
    """(peer, ranks, op, size, round) -> microseconds, from a TSV of mpi_bench.c or gloo_bench.py rows."""
    times = {}
    for line in open(path):
        cells = line.rstrip('\n').split('\t')
        if not cells[0].startswith('#'):
            times[(cells[0], int(cells[1]), cells[2], int(cells[3]), cells[10])] = float(cells[4])
    return times


def rxccl_times(path):
    """(op, size) -> (out-of-place us, in-place us or None) from `rxccl bench` output; of a block of
    several rows the first (a size run only to warm up) is left out, and a size's first row counts."""
    blocks = []
    for line in open(path):
        block = re.match(r'# (\w+), \d+ ranks', line)
        cells = line.split()
        if block:
            blocks.append((block.group(1), []))
        elif blocks and len(cells) >= 13 and cells[0].isdigit():
            blocks[-1][1].append((int(cells[0]), float(cells[5]), float(cells[9]) if cells[9] != '-' else None))
    times = {}
    for op, rows in blocks:
        for size, out_of_place, in_place in rows[1:] if len(rows) > 1 else rows:
            times.setdefault((op, size), (out_of_place, in_place))
    return times


def reported(row):
    """The time a table gives for an rxccl_times row: in place, or out of place where a collective
    has no in-place form (None: no such row)."""
    return None if row is None else row[1] if row[1] is not None else row[0]


def median(values):
    """The median of the values measured (None: not measured), or nan where none was."""
    measured = [value for value in values if value]
    return statistics.median(measured) if measured else float('nan')


def ratios(ours, peer):
    """The same-round ratios rxccl / peer, where both measured."""
    return [a / b for a, b in zip(ours, peer) if a and b]


def ratio_text(ours, peer):
    """The median (min-max) of same-round ratios rxccl / peer."""
    q = ratios(ours, peer)
    return f'{statistics.median(q):.2f} ({min(q):.2f}-{max(q):.2f})'


def beside(v, t, x, *more):
    """The cells every row shares: vader, MPI tcp, rxccl (and `more` of its columns), the ratios to both peers."""
    return ' | '.join([f'{median(v):.1f}', f'{median(t):.1f}', f'{median(x):.1f}', *(f'{median(m):.1f}' for m in more), ratio_text(x, v), ratio_text(x, t)])


def two_rank_all_reduce(folder, rounds):
    """Per size of the 2-rank sweep, each round's vader, MPI tcp, rxccl in place and rxccl fresh
    result times (rounds.sh's mpi.tsv and rx-rR.txt in `folder`)."""
    mpi = peer_times(f'{folder}/mpi.tsv')
    ours = {r: rxccl_times(f'{folder}/rx-r{r}.txt') for r in rounds}
    for size in (8, 1024, 8192, 131072, 1048576, 8388608, 67108864):
        rows = [ours[r].get(('allreduce', size), (None, None)) for r in rounds]
        yield (size, [mpi.get(('mpi-shm', 2, 'allreduce', size, f'r{r}')) for r in rounds], [mpi.get(('mpi-tcp', 2, 'allreduce', size, f'r{r}')) for r in rounds],
               [row[1] for row in rows], [row[0] for row in rows])


def print_many_ranks(folder, rank_counts, rounds):
    """The 8 B and 1 KiB all-reduce and the barrier at each rank count beside Open MPI tcp, from a
    folder of rounds.sh's `n/` files (mpi.tsv, rx-N-rR.txt): each round's times and the ratios."""
    peer = peer_times(f'{folder}/mpi.tsv')
    for n in rank_counts:
        ours = {r: rxccl_times(f'{folder}/rx-{n}-r{r}.txt') for r in rounds}
        for op, size in (('allreduce', 8), ('allreduce', 1024), ('barrier', 8)):
            # mpi_bench.c files a barrier under size 0 (older files under 8); rxccl bench under 0, in its one form.
            t = [peer.get(('mpi-tcp', n, op, size if op == 'allreduce' else 0, f'r{r}')) or peer.get(('mpi-tcp', n, op, size, f'r{r}')) for r in rounds]
            x = [ours[r].get((op, size), (None, None))[1] if op == 'allreduce' else ours[r].get((op, 0), (None, None))[0] for r in rounds]
            rt = ratios(x, t)
            print(n, op, size, 'mpi tcp', t, 'rx', x, 'ratio med', round(statistics.median(rt), 2) if rt else None, (round(min(rt), 2), round(max(rt), 2)) if rt else '')
