#!/bin/bash
# Session 54: the agreement along a ring (main) against a chain (branch wt-chain-agreement), same
# window, alternating. CHAIN is a checkout of that branch with its dist built (npm run build; its
# node_modules and native/build may be links to this clone's).
# Usage: bench/collectives/results/session54/rounds.sh OUT CHAIN  (OUT gets ring-N-rR.txt,
# chain-N-rR.txt, then bcast-{ring,chain}-8-rR.txt and bcast-mpi.tsv beside Open MPI tcp)
cd "$(dirname "$0")/../../../.."
OUT=$1; CHAIN=$2; mkdir -p $OUT
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca oob_tcp_if_include lo --mca mpi_yield_when_idle 1 --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo)
bench() { (cd $1 && RXCCL_CLI=dist node bin/rxccl.mjs bench "${@:2}"); }
for r in 1 2 3; do for side in ring chain; do
  dir=$PWD; [ $side = chain ] && dir=$CHAIN
  for n in 2 8; do bench $dir -n $n --op broadcast,allreduce,barrier,allgather --sizes 1024,8,1024 > $OUT/$side-$n-r$r.txt 2>&1; done
done; done
for r in 1 2 3; do
  "${MPIRUN[@]}" -np 8 /tmp/peers-build/mpi_bench mpi-tcp r$r $OUT/bcast-mpi.tsv broadcast 8,1024 > /dev/null 2>&1
  for side in ring chain; do
    dir=$PWD; [ $side = chain ] && dir=$CHAIN
    bench $dir -n 8 --op broadcast --sizes 1024,8,1024 > $OUT/bcast-$side-8-r$r.txt 2>&1
  done
done
