#!/bin/bash
# Open MPI tcp and rxccl bench in turn, per round, at 8 then 16 ranks.
cd /work/wt-cost
for n in 8 16; do
  rounds=3; [ $n = 16 ] && rounds=2
  for round in $(seq 1 $rounds); do
    echo "== n=$n round=$round $(uptime)"
    mpirun --allow-run-as-root --oversubscribe --mca oob_tcp_if_include lo -np $n --mca pml ob1 --mca btl tcp,self \
      --mca btl_tcp_if_include lo --mca mpi_yield_when_idle 1 /tmp/peers-build/mpi_bench mpi-tcp r$round /tmp/wt-cost/mpi-$n-$round.txt \
      allreduce,broadcast,allgather,barrier 8,1024 2>&1 | tail -12
    echo "-- rxccl $(uptime)"
    node bin/rxccl.mjs bench -n $n --op allreduce,broadcast,allgather,barrier --sizes 1024,8,1024 2>&1 | grep -v WARN | grep -v "^$"
  done
done
echo "== end $(uptime)"
