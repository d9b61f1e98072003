#!/usr/bin/env bash
# bench/putget.sh - same-node put/get latency, 8 B, 64 B and 64 KiB, on the PMIx
# transport with 2 PEs: direct copies into the peer's mapped heap against
# libfabric RMA (provider shm, then tcp;ofi_rxm over lo), each started at
# SHMEM_THREAD_SINGLE and at SHMEM_THREAD_MULTIPLE.  bench/putget.c.
set -u
BIN=${BENCH_BIN:-build/bench}/putget
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_oob_tcp_if_include=lo
export FI_TCP_IFACE=lo IPATH_NO_BACKTRACE=1 SHMEM_SYMMETRIC_HEAP_SIZE=16M
for prov in shm "tcp;ofi_rxm"; do
  for direct in 1 0; do
    for level in 0 3; do
      echo "# FI_PROVIDER=$prov SHMALLOC_PMIX_OFI_DIRECT=$direct BENCH_THREAD_LEVEL=$level"
      FI_PROVIDER=$prov SHMALLOC_PMIX_OFI_DIRECT=$direct BENCH_THREAD_LEVEL=$level timeout 120 mpirun --oversubscribe \
        -np 2 -x FI_PROVIDER -x FI_TCP_IFACE -x SHMALLOC_PMIX_OFI_DIRECT -x SHMEM_SYMMETRIC_HEAP_SIZE \
        -x BENCH_THREAD_LEVEL -x IPATH_NO_BACKTRACE "$BIN"
    done
  done
done
