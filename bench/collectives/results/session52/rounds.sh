#!/bin/bash
# Session 52 same-window rounds, one host, in place: 8, 16 and 32 ranks beside Open MPI tcp (yield
# when idle), all-reduce, broadcast, all-gather and barrier at 8 B and 1 KiB, all-reduce at 1 MiB.
# Usage: bench/collectives/results/session52/rounds.sh OUT [ROUNDS]  (OUT gets mpi.tsv, rx-N-rR.txt, log)
# The namespaces' rows were taken with rxccl bench itself (its --hosts and --peers): see README there.
cd "$(dirname "$0")/../../../.."
OUT=$1; ROUNDS=${2:-2}; mkdir -p $OUT
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca oob_tcp_if_include lo --mca mpi_yield_when_idle 1 --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo)
for r in $(seq 1 $ROUNDS); do for n in 8 16 32; do
  echo "round $r n $n $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $OUT/log
  "${MPIRUN[@]}" -np $n /tmp/peers-build/mpi_bench mpi-tcp r$r $OUT/mpi.tsv allreduce,broadcast,allgather,barrier 8,1024 > /dev/null 2>&1
  "${MPIRUN[@]}" -np $n /tmp/peers-build/mpi_bench mpi-tcp r$r $OUT/mpi.tsv allreduce 1048576 > /dev/null 2>&1
  node bin/rxccl.mjs bench -n $n --op allreduce,broadcast,allgather,barrier --sizes 1024,8,1024 > $OUT/rx-$n-r$r.txt 2>&1
  node bin/rxccl.mjs bench -n $n --op allreduce --sizes 1048576 > $OUT/rx1m-$n-r$r.txt 2>&1
done; done
echo "end $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $OUT/log
