#!/bin/bash
# #46 item 3, same-window rounds: broadcast and all-gather (SIZE = the whole output for both
# rxccl and mpi_bench), one host; Open MPI over vader and over ob1/tcp, then rxccl's builds named
# on the command line (label=directory), in turn, every round.
# usage: rounds.sh OUT ROUNDS label=/path/to/rxccl [label=/path ...]
# env: RX_OPS rxccl's collectives (default broadcast,allgather; Open MPI runs broadcast,allgather),
#      RANKS world sizes (default "2 4"), SIZES bytes (default 8 KiB..8 MiB),
#      ALTERNATE=1 runs the builds in reverse order every other round.
OUT=$1; ROUNDS=$2; shift 2
SIZES=${SIZES:-8192,32768,131072,262144,524288,1048576,2097152,4194304,8388608}
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca oob_tcp_if_include lo)
mkdir -p "$OUT"
for r in $(seq 1 "$ROUNDS"); do for n in ${RANKS:-2 4}; do
  echo "round $r n $n $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> "$OUT/log"
  "${MPIRUN[@]}" -np $n --mca btl_tcp_if_include lo /tmp/peers-build/mpi_bench mpi-shm r$r "$OUT/mpi.tsv" broadcast,allgather $SIZES > /dev/null 2>&1
  "${MPIRUN[@]}" -np $n --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo /tmp/peers-build/mpi_bench mpi-tcp r$r "$OUT/mpi.tsv" broadcast,allgather $SIZES > /dev/null 2>&1
  builds=("$@")
  if [ "${ALTERNATE:-0}" = 1 ] && [ $((r % 2)) = 0 ]; then builds=(); for ((i = $#; i >= 1; i--)); do builds+=("${!i}"); done; fi
  for build in "${builds[@]}"; do
    label=${build%%=*}; dir=${build#*=}
    (cd "$dir" && node bin/rxccl.mjs bench -n $n --op ${RX_OPS:-broadcast,allgather} --sizes 1024,$SIZES > "$OUT/rx-$label-$n-r$r.txt" 2>&1)
  done
done; done
echo "end $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> "$OUT/log"
