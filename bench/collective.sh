#!/usr/bin/env bash
# bench/collective.sh - item 3: the collective calls on shmalloc's two
# transports and on Open MPI's own OpenSHMEM, side by side in one run.
# Builds bench/collective.c three ways, runs each with 2 and 4 PEs, adds the
# rows to bench/results/summary.csv (suite "collective") and prints the
# shmalloc / Open MPI ratios.  Figures only: nothing here passes or fails.
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
mkdir -p "$B/bench"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_opal_common_ucx_opal_mem_hooks=0 FI_TCP_IFACE=lo
FLAGS="-std=c99 -O2 -I."
rows=$(mktemp)

make -s B="$B" "$B/libshmalloc.a" "$B/libshmalloc_pthreads.a" || exit 1
cc $FLAGS -DBENCH_PTHREADS bench/collective.c "$B/libshmalloc_pthreads.a" "$B/libshmalloc.a" -pthread \
  -o "$B/bench/coll_pthreads" || exit 1
have_pmix=0
if pkg-config --exists pmix libfabric 2>/dev/null && make -s B="$B" "$B/libshmalloc_pmix_ofi.a"; then
  cc $FLAGS -DBENCH_PMIX_OFI bench/collective.c "$B/libshmalloc_pmix_ofi.a" "$B/libshmalloc.a" \
    $(pkg-config --cflags --libs pmix libfabric) -o "$B/bench/coll_pmix" && have_pmix=1
fi
have_osh=0
scripts/deps.sh bench >/dev/null 2>&1 || true # Open MPI's OpenSHMEM headers (libopenmpi-dev)
oshcc $FLAGS bench/collective.c -o "$B/bench/coll_oshmem" 2>/dev/null && have_osh=1

add() { # LABEL PES command...
  local label=$1 pes=$2; shift 2
  local out
  if ! out=$(timeout 300 "$@" 2>/dev/null); then echo "note: $label with $pes PEs did not run"; return; fi
  grep -E '^[a-z_0-9A-Z]+,[0-9]' <<<"$out" | awk -F, -v a="$label" -v p="$pes" \
    '{ printf "collective,%s,%s,%s,%s,%s,%s,%s,,\n", a, $1, p, $2, $3, $4, $5 }' >>"$rows"
}

for pes in 2 4; do
  add shmalloc-pthreads $pes "$B/bench/coll_pthreads" $pes
  if [ $have_pmix = 1 ]; then
    add shmalloc-pmix-shm $pes env FI_PROVIDER=shm mpirun --oversubscribe -np $pes -x FI_PROVIDER "$B/bench/coll_pmix"
    add shmalloc-pmix-tcp $pes env FI_PROVIDER="tcp;ofi_rxm" mpirun --oversubscribe -np $pes -x FI_PROVIDER -x FI_TCP_IFACE "$B/bench/coll_pmix"
  fi
  [ $have_osh = 1 ] && add openmpi-oshmem $pes oshrun --oversubscribe -np $pes "$B/bench/coll_oshmem"
done
[ $have_osh = 1 ] || echo "note: Open MPI's OpenSHMEM (oshcc, libopenmpi-dev) is not available: no ratios"

BENCH_LIB=1 source bench/run.sh
summary_put collective "$rows"
echo
echo "collective calls, median ns per call (2 and 4 PEs), and shmalloc / Open MPI OpenSHMEM"
awk -F, '{ v[$2 "," $3 "," $4] = $5; w[$3] = 1; a[$2] = 1 }
  END {
    for (x in w) for (p = 2; p <= 4; p += 2) {
      o = v["openmpi-oshmem," x "," p]
      line = sprintf("  %-18s %d PEs:", x, p)
      for (y in a) if (v[y "," x "," p] != "") {
        line = line sprintf("  %s %s", y, v[y "," x "," p])
        if (o != "" && y != "openmpi-oshmem") line = line sprintf(" (x%.2f)", v[y "," x "," p] / o)
      }
      print line
    }
  }' "$rows" | sort
rm -f "$rows"
