#!/bin/bash
# Session 50 same-window rounds: 2 ranks in place (vader, MPI tcp, rxccl), then 8 and 16 ranks small sizes.
cd /work/main
SIZES=8,1024,8192,131072,1048576,8388608,67108864
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca oob_tcp_if_include lo)
OUT=/tmp/b50
for r in 1 2 3; do
  echo "round $r $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $OUT/log
  "${MPIRUN[@]}" -np 2 --mca btl_tcp_if_include lo /tmp/peers-build/mpi_bench mpi-shm r$r $OUT/mpi.tsv allreduce $SIZES > /dev/null 2>&1
  "${MPIRUN[@]}" -np 2 --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo /tmp/peers-build/mpi_bench mpi-tcp r$r $OUT/mpi.tsv allreduce $SIZES > /dev/null 2>&1
  node bin/rxccl.mjs bench -n 2 --op allreduce --sizes 1024,$SIZES > $OUT/rx-r$r.txt 2>&1
done
for r in 1 2 3; do for n in 8 16; do
  echo "round $r n $n $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $OUT/log
  "${MPIRUN[@]}" --mca mpi_yield_when_idle 1 -np $n --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo /tmp/peers-build/mpi_bench mpi-tcp r$r $OUT/n/mpi.tsv allreduce,barrier 8,1024 > /dev/null 2>&1
  node bin/rxccl.mjs bench -n $n --op allreduce,barrier --sizes 1024,8,1024 > $OUT/n/rx-$n-r$r.txt 2>&1
done; done
/usr/bin/python3 /work/shared/peers/gloo_bench.py --world 2 --ops allreduce --sizes 8,1024,131072,1048576 --tag g1 --out $OUT/gloo.tsv > $OUT/gloo.txt 2>&1
echo "end $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $OUT/log
