# mk/bench.mk - the benchmarks, included by the top-level Makefile (which
# defines CC, B and WARN).  bench/README.md says what each one measures.
#
#   make bench           every suite, then bench/results/summary.csv, the plot and a table
#   make bench-core      workloads a-d on every allocator of bench/allocators
#   make bench-cest      the cycle estimate per op, repeatable to the digit (bench/cest.sh):
#                        CEST_WORKLOADS (abcd), LIVE, REGION; METADATA=separate measures
#                        shmalloc-separate, CEST_ALLOCATORS any allocators of bench/allocators
#   make bench-plot      bench/results/core.svg from the last summary.csv
#   make bench-scaling   workload b over live sets 1k..1M and heaps 64 MiB..64 GiB
#   make bench-hugepages random 8-byte accesses over 1 GiB on each kind of page
#   make bench-putget    same-node puts and gets: direct copies against libfabric
#   make bench-cluster   collective calls with PEs on 2, 3 and 4 namespace nodes (root)
#   make bench-floor     one cache line passed between two cpus: the floor under a barrier
#   make bench-deferred  shmemx_free_deferred and a drain against shmem_free, 2/4/8 pthreads PEs
#   make bench-spaces    a 2-PE space's malloc+free pair against the world's, and a team busy alone
#
# Run as root, it installs what it lacks (scripts/deps.sh bench); an
# allocator whose library is still missing is skipped with a note.  RT=1
# runs the timed loops at real-time priority (root).
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
# The allocators compared, one line each in bench/allocators: a name (its
# adapter is bench/alloc_NAME.c), then what its binaries link with.
BENCH_ALLOCATORS := $(shell awk '/^[^\#]/ { print $$1 }' bench/allocators)
bench_libs     = $(shell awk -v n='$(1)' '$$1 == n { $$1 = ""; print }' bench/allocators)
BENCH_PROGRAMS = $(BENCH_B)/scaling $(foreach a,$(BENCH_ALLOCATORS),$(BENCH_B)/core_$(a) $(BENCH_B)/cest_$(a))
# mk/bench.mk too: a change of flags rebuilds.
BENCH_HEADERS  = shmalloc.h bench/workload.h bench/stats.h mk/bench.mk

.PHONY: bench bench-core bench-scaling bench-deps bench-build bench-hugepages bench-putget bench-cluster bench-floor bench-cest \
        bench-deferred bench-spaces bench-plot bench-check

bench: bench-deps
	@$(MAKE) --no-print-directory -f $(BENCH_TOP) bench-build
	BENCH_BIN=$(BENCH_B) RT=$(RT) bash bench/run.sh all

bench-core: bench-deps
	@$(MAKE) --no-print-directory -f $(BENCH_TOP) bench-build
	BENCH_BIN=$(BENCH_B) RT=$(RT) bash bench/run.sh core

bench-scaling: bench-deps
	@$(MAKE) --no-print-directory -f $(BENCH_TOP) bench-build
	BENCH_BIN=$(BENCH_B) RT=$(RT) bash bench/run.sh scaling

CEST_WORKLOADS  ?= abcd
CEST_ALLOCATORS ?= $(if $(filter separate,$(METADATA)),shmalloc-separate,shmalloc)
bench-cest: $(CEST_ALLOCATORS:%=$(BENCH_B)/cest_%)
	BENCH_BIN=$(BENCH_B) LIVE=$(LIVE) REGION=$(REGION) bash bench/cest.sh $(CEST_WORKLOADS) $(CEST_ALLOCATORS)

bench-plot:
	bash bench/run.sh plot

# make test's check that bench-cest runs from this tree: a short loop of
# each workload, both metadata modes, gives every count (not their values).
bench-check:
	@MAKE="$(MAKE)" B="$(B)" tests/checks/bench_check.sh

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

$(BENCH_B)/deferred: bench/deferred.c bench/stats.h $(PTHREADS) $(ALLOC) | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) -DBENCH_PTHREADS $(filter-out %.h,$^) -pthread -o $@

# The same on PMIx PEs: FI_PROVIDER=shm mpirun --oversubscribe -np N build/bench/deferred_pmix
$(BENCH_B)/deferred_pmix: bench/deferred.c bench/stats.h $(PMIX_OFI) $(ALLOC) | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) -DBENCH_PMIX_OFI $(PMIX_FLAGS) $(filter-out %.h,$^) $(PMIX_LIBS) -pthread -o $@

# Spaces: a 2-PE space's pair against the world's on 8 PEs, and 10 000
# space allocations of one team while another computes or sleeps for 5 s;
# on pthreads PEs, then on 8 PMIx PEs (shm)
bench-spaces: $(BENCH_B)/spaces $(BENCH_B)/spaces_pmix
	$(BENCH_B)/spaces
	$(MPIRUN_ENV) timeout 300 mpirun --oversubscribe -np 8 -x FI_PROVIDER $(BENCH_B)/spaces_pmix

$(BENCH_B)/spaces: bench/spaces.c bench/stats.h $(PTHREADS) $(ALLOC) | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) -DBENCH_PTHREADS $(filter-out %.h,$^) -pthread -o $@
$(BENCH_B)/spaces_pmix: bench/spaces.c bench/stats.h $(PMIX_OFI) $(ALLOC) | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) -DBENCH_PMIX_OFI $(PMIX_FLAGS) $(filter-out %.h,$^) $(PMIX_LIBS) -pthread -o $@

$(BENCH_B)/floor: bench/floor.c bench/stats.h | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) $< -pthread -o $@

$(BENCH_B)/hugepages: bench/hugepages.c bench/stats.h $(PTHREADS) $(ALLOC) | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) $(filter-out %.h,$^) -pthread -o $@

$(BENCH_B)/putget: bench/putget.c bench/stats.h $(PMIX_OFI) $(ALLOC) | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) $(PMIX_FLAGS) $(filter-out %.h,$^) $(PMIX_LIBS) -o $@

# BENCH_BASELINE=REV adds that git revision's transport, for before/after.
bench-cluster:
	B=$(B) bash bench/cluster.sh

# What a missing package leaves out is skipped with a note.
bench-deps:
	@scripts/deps.sh bench || echo "bench: note: not every package could be installed; those parts are skipped"

bench-build: $(BENCH_PROGRAMS)

$(BENCH_B):
	mkdir -p $@

# The allocator for bench/scaling.c (the shmalloc adapters expand it themselves).
$(BENCH_B)/shmalloc.o: shmalloc.c shmalloc.h mk/bench.mk | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) -c $< -o $@

$(BENCH_B)/scaling: bench/scaling.c $(BENCH_HEADERS) $(BENCH_B)/shmalloc.o
	$(CC) $(BENCH_CFLAGS) bench/scaling.c $(BENCH_B)/shmalloc.o $(BENCH_LDFLAGS) -o $@

# A driver and one adapter make an allocator's binary (a system allocator's
# library linked ahead of libc, so its malloc wins; core checks at start-up
# where its malloc came from).  A library that does not link leaves no
# binary and a note; run.sh and cest.sh skip it.
$(BENCH_B)/alloc_%.o: bench/alloc_%.c bench/alloc.h $(wildcard bench/alloc_*.h) $(BENCH_HEADERS) | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) -c $< -o $@

bench_link = @if printf 'int main(void){return 0;}\n' | $(CC) -x c - -x none $(call bench_libs,$(2)) -o /dev/null 2>/dev/null; then \
	  echo "$(CC) $(BENCH_CFLAGS) $(1) ... $(call bench_libs,$(2)) -o $@"; \
	  $(CC) $(BENCH_CFLAGS) $(1) $(BENCH_B)/alloc_$(2).o $(BENCH_LDFLAGS) $(call bench_libs,$(2)) -o $@; \
	else rm -f $@; echo "bench: note: $(2) skipped: $(call bench_libs,$(2)) does not link (scripts/deps.sh bench installs it)"; fi

.SECONDARY: $(BENCH_ALLOCATORS:%=$(BENCH_B)/alloc_%.o)
$(BENCH_B)/core_%: bench/core.c $(BENCH_B)/alloc_%.o bench/allocators
	$(call bench_link,bench/core.c,$*)

$(BENCH_B)/cest_%: bench/cest.c $(BENCH_B)/alloc_%.o bench/allocators
	$(call bench_link,bench/cest.c,$*)

.DEFAULT_GOAL := $(bench_saved_goal)
