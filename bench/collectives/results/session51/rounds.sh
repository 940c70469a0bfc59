#!/bin/bash
# Session 51 same-window rounds: 2 ranks in place (vader, MPI tcp, rxccl), 4 ranks broadcast and
# all-gather beside vader and MPI tcp, then 8 and 16 ranks small sizes beside MPI tcp (yield when idle).
# Usage: bench/collectives/results/session51/rounds.sh OUT  (OUT gets mpi.tsv, rx-*.txt, n/, log)
cd "$(dirname "$0")/../../../.."
OUT=$1; mkdir -p $OUT/n
SIZES=8,1024,8192,131072,1048576,8388608,67108864
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca oob_tcp_if_include lo)
for r in 1 2 3; do
  echo "round $r $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $OUT/log
  "${MPIRUN[@]}" -np 2 --mca btl_tcp_if_include lo /tmp/peers-build/mpi_bench mpi-shm r$r $OUT/mpi.tsv allreduce $SIZES > /dev/null 2>&1
  "${MPIRUN[@]}" -np 2 --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo /tmp/peers-build/mpi_bench mpi-tcp r$r $OUT/mpi.tsv allreduce $SIZES > /dev/null 2>&1
  node bin/rxccl.mjs bench -n 2 --op allreduce --sizes 1024,$SIZES > $OUT/rx-r$r.txt 2>&1
  "${MPIRUN[@]}" -np 4 --mca btl_tcp_if_include lo /tmp/peers-build/mpi_bench mpi-shm r$r $OUT/mpi4.tsv broadcast,allgather 262144,1048576,4194304 > /dev/null 2>&1
  "${MPIRUN[@]}" -np 4 --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo /tmp/peers-build/mpi_bench mpi-tcp r$r $OUT/mpi4.tsv broadcast,allgather 262144,1048576,4194304 > /dev/null 2>&1
  node bin/rxccl.mjs bench -n 4 --op broadcast,allgather --sizes 1024,262144,1048576,4194304 > $OUT/rx4-r$r.txt 2>&1
done
for r in 1 2 3; do for n in 8 16; do
  echo "round $r n $n $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $OUT/log
  "${MPIRUN[@]}" --mca mpi_yield_when_idle 1 -np $n --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo /tmp/peers-build/mpi_bench mpi-tcp r$r $OUT/n/mpi.tsv allreduce,barrier 8,1024 > /dev/null 2>&1
  node bin/rxccl.mjs bench -n $n --op allreduce,barrier --sizes 1024,8,1024 > $OUT/n/rx-$n-r$r.txt 2>&1
done; done
echo "end $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $OUT/log
