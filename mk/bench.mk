# mk/bench.mk - the benchmarks of issue 6, included by the top-level Makefile
# (which defines CC, B and WARN).
#
#   make bench           every suite, then bench/results/summary.csv and a table
#   make bench-core      the TLSF core against glibc, jemalloc, tcmalloc, mimalloc
#   make bench-scaling   workload b over live sets 1k..1M and heaps 64 MiB..64 GiB
#   make bench-hugepages random 8-byte accesses over 1 GiB on each kind of page
#   make bench-putget    same-node puts and gets: direct copies against libfabric
#   make bench-cluster   collective calls with PEs on 2, 3 and 4 namespace nodes (root)
#   make bench-floor     one cache line passed between two cpus: the floor under a barrier
#   make bench-deferred  shmemx_free_deferred and a drain against shmem_free, 2/4/8 pthreads PEs
#   make bench-cest      the core's simulated cost per op on allocbench (CEST_WORKLOADS,
#                        LIVE, REGION as cest.sh takes them), repeatable to the digit;
#                        METADATA=separate measures the core with separate metadata
#
# Run as root, it installs what it lacks (scripts/deps.sh bench); an
# allocator whose library is still missing is skipped with a note.
# Benchmarks print figures; they never fail on time.

# This file may be included before the Makefile's first target: keep the
# default goal as the Makefile sets it (restored at the end).
bench_saved_goal := $(.DEFAULT_GOAL)

B ?= build
# The makefile that included this one: the sub-make below reads it again.
BENCH_TOP     := $(firstword $(MAKEFILE_LIST))
BENCH_B        = $(B)/bench
# DWARF 4: valgrind 3.19 cannot read the DWARF 5 that clang emits, and
# callgrind needs the op_* names.
BENCH_CFLAGS   = -std=c99 -O2 -g -gdwarf-4 $(WARN) -I. -Ibench
# Bind every symbol at start-up, so no lazy PLT resolution lands in a timed
# or counted call.
BENCH_LDFLAGS  = -Wl,-z,now
BENCH_SYSTEMS  = jemalloc tcmalloc mimalloc
BENCH_LIB_jemalloc = -ljemalloc
BENCH_LIB_tcmalloc = -ltcmalloc_minimal
BENCH_LIB_mimalloc = -lmimalloc
BENCH_PKG_jemalloc = libjemalloc-dev
BENCH_PKG_tcmalloc = libgoogle-perftools-dev
BENCH_PKG_mimalloc = libmimalloc-dev
BENCH_PROGRAMS = $(BENCH_B)/core $(BENCH_B)/scaling
# mk/bench.mk too: a change of flags rebuilds.
BENCH_HEADERS  = shmalloc.h bench/workload.h mk/bench.mk

.PHONY: bench bench-core bench-scaling bench-deps bench-build bench-hugepages bench-putget bench-cluster bench-floor bench-cest \
        bench-deferred

bench: bench-deps
	@$(MAKE) --no-print-directory -f $(BENCH_TOP) bench-build
	BENCH_BIN=$(BENCH_B) bash bench/run.sh all

bench-core: bench-deps
	@$(MAKE) --no-print-directory -f $(BENCH_TOP) bench-build
	BENCH_BIN=$(BENCH_B) bash bench/run.sh core

bench-scaling: bench-deps
	@$(MAKE) --no-print-directory -f $(BENCH_TOP) bench-build
	BENCH_BIN=$(BENCH_B) bash bench/run.sh scaling

# The yardstick the core's targets are stated on lives beside the project,
# not in it: without it there is nothing to measure, and the target says so.
ALLOCBENCH     ?= ../shared/allocbench
CEST_WORKLOADS ?= abcd
bench-cest:
	@test -f $(ALLOCBENCH)/cest.sh || { echo "bench-cest: $(ALLOCBENCH)/cest.sh not found: allocbench is expected beside the project (or set ALLOCBENCH=DIR)"; exit 1; }
	sh $(ALLOCBENCH)/cest.sh $(if $(filter separate,$(METADATA)),bench/separate,.) $(CEST_WORKLOADS)

# Random 8-byte accesses over a 1 GiB heap: base pages, transparent huge
# pages, hugetlbfs pages (as root).  Same-node puts and gets of 8 B and
# 64 KiB, direct copies against libfabric (PMIx transport, 2 PEs).
bench-hugepages: $(BENCH_B)/hugepages
	BENCH_BIN=$(BENCH_B) bash bench/hugepages.sh

bench-putget: $(BENCH_B)/putget
	BENCH_BIN=$(BENCH_B) bash bench/putget.sh

bench-floor: $(BENCH_B)/floor
	$(BENCH_B)/floor

# shmemx_free_deferred: N releases and a drain against N collective frees, 2/4/8 pthreads PEs
bench-deferred: $(BENCH_B)/deferred
	$(BENCH_B)/deferred

$(BENCH_B)/deferred: bench/deferred.c $(PTHREADS) $(ALLOC) | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) -DBENCH_PTHREADS $^ -pthread -o $@

# The same on PMIx PEs: FI_PROVIDER=shm mpirun --oversubscribe -np N build/bench/deferred_pmix
$(BENCH_B)/deferred_pmix: bench/deferred.c $(PMIX_OFI) $(ALLOC) | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) -DBENCH_PMIX_OFI $(PMIX_FLAGS) $^ $(PMIX_LIBS) -pthread -o $@

$(BENCH_B)/floor: bench/floor.c | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) $< -pthread -o $@

$(BENCH_B)/hugepages: bench/hugepages.c $(PTHREADS) $(ALLOC) | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) $^ -pthread -o $@

$(BENCH_B)/putget: bench/putget.c $(PMIX_OFI) $(ALLOC) | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) $(PMIX_FLAGS) $^ $(PMIX_LIBS) -o $@

# BENCH_BASELINE=REV adds that git revision's transport, for before/after.
bench-cluster:
	B=$(B) bash bench/cluster.sh

# What a missing package leaves out is skipped with a note.
bench-deps:
	@scripts/deps.sh bench || echo "bench: note: not every package could be installed; those parts are skipped"

bench-build: $(BENCH_PROGRAMS) $(foreach s,$(BENCH_SYSTEMS),$(BENCH_B)/core_$(s))

$(BENCH_B):
	mkdir -p $@

# The allocator with counting hooks: the metadata bytes of bench/core.c.
$(BENCH_B)/shmalloc.o: bench/counted.c shmalloc.h mk/bench.mk | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) -c $< -o $@

$(BENCH_B)/core: bench/core.c $(BENCH_HEADERS) $(BENCH_B)/shmalloc.o
	$(CC) $(BENCH_CFLAGS) bench/core.c $(BENCH_B)/shmalloc.o $(BENCH_LDFLAGS) -o $@

$(BENCH_B)/scaling: bench/scaling.c $(BENCH_HEADERS) $(BENCH_B)/shmalloc.o
	$(CC) $(BENCH_CFLAGS) bench/scaling.c $(BENCH_B)/shmalloc.o $(BENCH_LDFLAGS) -o $@

# One binary per system allocator, linked ahead of libc so its malloc wins
# (core checks at start-up which library its malloc came from).  A library
# that does not link leaves no binary and a note; run.sh skips it.
$(BENCH_B)/core_%: bench/core.c $(BENCH_HEADERS) $(BENCH_B)/shmalloc.o
	@if printf 'int main(void){return 0;}\n' | $(CC) -x c - $(BENCH_LIB_$*) -o /dev/null 2>/dev/null; then \
	  echo "$(CC) $(BENCH_CFLAGS) -DBENCH_SYSTEM='\"$*\"' bench/core.c ... $(BENCH_LIB_$*) -o $@"; \
	  $(CC) $(BENCH_CFLAGS) -DBENCH_SYSTEM='"$*"' bench/core.c $(BENCH_B)/shmalloc.o \
	    $(BENCH_LDFLAGS) $(BENCH_LIB_$*) -o $@; \
	else rm -f $@; echo "bench: note: $* skipped: $(BENCH_LIB_$*) does not link (apt-get install $(BENCH_PKG_$*))"; fi

.DEFAULT_GOAL := $(bench_saved_goal)
