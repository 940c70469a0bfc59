#!/usr/bin/python3
"""torch.distributed (backend='gloo') collective benchmark on one host, loopback only.

Run with Debian's interpreter:  /usr/bin/python3 gloo_bench.py --world 2
Spawns N local processes (torch.multiprocessing.spawn), rendezvous via tcp://127.0.0.1:PORT,
Gloo transport pinned to the loopback interface (GLOO_SOCKET_IFNAME=lo).
Across hosts (network namespaces, `rxccl bench --hosts`): one process per rank, each started
with --rank R --master HOST --port P in its host (GLOO_SOCKET_IFNAME=eth0); rank 0 prints.
(From the peers' gloo_bench.py and multihost/gloo_mh.py, which differ only in that; shipped
with rxccl so that `rxccl bench --peers` runs from a clone or an install.)

Timing method (same as mpi_bench.c):
  for each (op, size): W warm-up ops, then S samples; a sample is
  barrier; t0; B back-to-back ops; t1  -> per-op time = (t1-t0)/B on each rank.
  The per-sample time is the MAX over ranks; we report median / min / max over samples.
Sizes are bytes of float32 payload (allgather: total gathered output, nccl-tests convention,
with at least 1 element per rank). GB/s uses 1e9 bytes.
busbw (nccl-tests): allreduce algbw*2(n-1)/n, allgather algbw*(n-1)/n, broadcast algbw.
cpu_cores = sum over ranks of (user+sys CPU seconds of the whole process / wall seconds) during the
sampled window (2.0 = both cores of this machine saturated).
"""
import argparse
import os
import resource
import socket
import statistics
import sys
import time

DEFAULT_SIZES = [8, 4096, 65536, 1 << 20, 16 << 20, 64 << 20]
DEFAULT_OPS = ["allreduce", "broadcast", "allgather", "barrier"]


def plan(nbytes):
    """(warmup ops, ops per sample, samples) -- bounded; fewer iterations for large sizes."""
    if nbytes <= 4096:
        return 50, 200, 11
    if nbytes <= 65536:
        return 20, 50, 11
    if nbytes <= (1 << 20):
        return 5, 10, 11
    if nbytes <= (16 << 20):
        return 3, 2, 7
    return 2, 1, 7


BARRIER_PLAN = (50, 200, 11)
TIME_BUDGET_S = 30.0  # per (op, size): stop taking further samples after this (min 3 samples)


def busbw_factor(op, n):
    if op == "allreduce":
        return 2.0 * (n - 1) / n
    if op == "allgather":
        return (n - 1) / n
    return 1.0


def worker(rank, args, port):
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    n = args.world
    dist.init_process_group("gloo", init_method=f"tcp://{args.master}:{port}", rank=rank, world_size=n)

    # correctness check (once)
    t = torch.ones(1000)
    dist.all_reduce(t)
    assert float(t[0]) == n and float(t[-1]) == n, "allreduce check failed"
    t = torch.full((1000,), 7.0 if rank == 0 else -1.0)
    dist.broadcast(t, 0)
    assert float(t.sum()) == 7000.0, "broadcast check failed"
    outs = [torch.empty(10) for _ in range(n)]
    dist.all_gather(outs, torch.full((10,), float(rank)))
    assert all(float(o[0]) == i for i, o in enumerate(outs)), "allgather check failed"

    rows = []
    for op in args.ops:
        sizes = [0] if op == "barrier" else args.sizes
        for size in sizes:
            if op == "barrier":
                warm, batch, samples = BARRIER_PLAN
                fn = dist.barrier
                nbytes = 0
            elif op == "allreduce":
                warm, batch, samples = plan(size)
                buf = torch.zeros(max(1, size // 4))
                nbytes = buf.numel() * 4
                fn = lambda: dist.all_reduce(buf)  # noqa: E731  (SUM, in place)
            elif op == "broadcast":
                warm, batch, samples = plan(size)
                buf = torch.zeros(max(1, size // 4))
                nbytes = buf.numel() * 4
                fn = lambda: dist.broadcast(buf, 0)  # noqa: E731
            elif op == "allgather":
                warm, batch, samples = plan(size)
                per = max(1, size // 4 // n)
                inp = torch.zeros(per)
                outl = [torch.zeros(per) for _ in range(n)]
                nbytes = per * 4 * n
                fn = lambda: dist.all_gather(outl, inp)  # noqa: E731
            else:
                raise SystemExit(f"unknown op {op}")

            for _ in range(warm):
                fn()
            times = []
            ru0 = resource.getrusage(resource.RUSAGE_SELF)
            t_start = time.perf_counter()
            for s in range(samples):
                dist.barrier()
                t0 = time.perf_counter()
                for _ in range(batch):
                    fn()
                t1 = time.perf_counter()
                times.append((t1 - t0) / batch)
                # bounded: agree (outside the timed region) on stopping early
                flag = torch.tensor([1.0 if (time.perf_counter() - t_start) > TIME_BUDGET_S and s >= 2 else 0.0])
                dist.all_reduce(flag, op=dist.ReduceOp.MAX)
                if flag.item() > 0:
                    break
            wall = time.perf_counter() - t_start
            ru1 = resource.getrusage(resource.RUSAGE_SELF)
            # CPU cores busy during the sampled window, summed over ranks (all threads of each rank)
            cpu = torch.tensor([(ru1.ru_utime - ru0.ru_utime + ru1.ru_stime - ru0.ru_stime) / wall],
                               dtype=torch.float64)
            dist.all_reduce(cpu)
            tt = torch.tensor(times, dtype=torch.float64)
            dist.all_reduce(tt, op=dist.ReduceOp.MAX)
            if rank == 0:
                v = [x * 1e6 for x in tt.tolist()]
                med = statistics.median(v)
                algbw = (nbytes / (med * 1e-6) / 1e9) if nbytes else 0.0
                busbw = algbw * busbw_factor(op, n)
                row = (f"gloo\t{n}\t{op}\t{nbytes}\t{med:.1f}\t{min(v):.1f}\t{max(v):.1f}\t"
                       f"{algbw:.3f}\t{busbw:.3f}\t{len(v)}x{batch}\t{args.tag}\t{cpu.item():.2f}")
                print(row, flush=True)
                rows.append(row)
            if op != "barrier":
                del fn
    if rank == 0 and args.out:
        with open(args.out, "a") as f:
            for r in rows:
                f.write(r + "\n")
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--ops", default=",".join(DEFAULT_OPS))
    ap.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES))
    ap.add_argument("--tag", default="run1")
    ap.add_argument("--out", default="")
    ap.add_argument("--rank", type=int, default=-1)  # perfmh: run ONE rank (multi-namespace)
    ap.add_argument("--master", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    args.ops = [o for o in args.ops.split(",") if o]
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import torch.multiprocessing as mp

    if args.rank >= 0:
        if args.rank == 0: print("#peer\tworld\top\tbytes\tmedian_us\tmin_us\tmax_us\talgbw_GBps\tbusbw_GBps\tsamples\ttag\tcpu_cores", flush=True)
        worker(args.rank, args, args.port); return
    print("#peer\tworld\top\tbytes\tmedian_us\tmin_us\tmax_us\talgbw_GBps\tbusbw_GBps\tsamples\ttag\tcpu_cores", flush=True)
    mp.spawn(worker, args=(args, free_port()), nprocs=args.world, join=True)


if __name__ == "__main__":
    main()
