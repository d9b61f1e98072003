# mk/bench.mk - the benchmarks of issue 6, included by the top-level Makefile
# (which defines CC, B and WARN).
#
#   make bench           every suite, then bench/results/summary.csv and a table
#   make bench-core      the TLSF core against glibc, jemalloc, tcmalloc, mimalloc
#   make bench-scaling   workload b over live sets 1k..1M and heaps 64 MiB..64 GiB
#   make bench-hugepages random 8-byte accesses over 1 GiB on each kind of page
#   make bench-putget    same-node puts and gets: direct copies against libfabric
#   make bench-cluster   collective calls with PEs on 2 and 3 namespace nodes (root)
#
# Run as root, it installs what it lacks with apt-get, as `make deps` does;
# an allocator whose library is still missing is skipped with a note.
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
BENCH_PKGS     = $(foreach s,$(BENCH_SYSTEMS),$(BENCH_PKG_$(s))) gnuplot-nox valgrind
BENCH_PROGRAMS = $(BENCH_B)/core $(BENCH_B)/scaling
# mk/bench.mk too: a change of flags rebuilds.
BENCH_HEADERS  = shmalloc.h bench/workload.h mk/bench.mk

.PHONY: bench bench-core bench-scaling bench-deps bench-build bench-hugepages bench-putget bench-cluster

bench: bench-deps
	@$(MAKE) --no-print-directory -f $(BENCH_TOP) bench-build
	BENCH_BIN=$(BENCH_B) bash bench/run.sh all

bench-core: bench-deps
	@$(MAKE) --no-print-directory -f $(BENCH_TOP) bench-build
	BENCH_BIN=$(BENCH_B) bash bench/run.sh core

bench-scaling: bench-deps
	@$(MAKE) --no-print-directory -f $(BENCH_TOP) bench-build
	BENCH_BIN=$(BENCH_B) bash bench/run.sh scaling

# Random 8-byte accesses over a 1 GiB heap: base pages, transparent huge
# pages, hugetlbfs pages (as root).  Same-node puts and gets of 8 B and
# 64 KiB, direct copies against libfabric (PMIx transport, 2 PEs).
bench-hugepages: $(BENCH_B)/hugepages
	BENCH_BIN=$(BENCH_B) bash bench/hugepages.sh

bench-putget: $(BENCH_B)/putget
	BENCH_BIN=$(BENCH_B) bash bench/putget.sh

$(BENCH_B)/hugepages: bench/hugepages.c shmalloc.h transports/shmalloc_pthreads.c transports/shmalloc_map.h | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) bench/hugepages.c transports/shmalloc_pthreads.c -pthread -o $@

$(BENCH_B)/putget: bench/putget.c shmalloc.h transports/shmalloc_pmix_ofi.c transports/shmalloc_map.h | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) bench/putget.c transports/shmalloc_pmix_ofi.c $$(pkg-config --cflags --libs pmix libfabric) -o $@

# BENCH_BASELINE=REV adds that git revision's transport, for before/after.
bench-cluster:
	B=$(B) bash bench/cluster.sh

# Only the packages that are missing, and only as root; anything else is a note.
bench-deps:
	@missing=; for p in $(BENCH_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "bench: installing$$missing"; \
	    apt-get update -qq >/dev/null 2>&1; \
	    for p in $$missing; do DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$p >/dev/null 2>&1 || \
	      echo "bench: note: could not install $$p"; done; \
	  else echo "bench: note: missing$$missing (apt-get install them as root); those parts are skipped"; fi; \
	fi

bench-build: $(BENCH_PROGRAMS) $(foreach s,$(BENCH_SYSTEMS),$(BENCH_B)/core_$(s))

$(BENCH_B):
	mkdir -p $@

$(BENCH_B)/shmalloc_impl.o: bench/shmalloc_impl.c shmalloc.h | $(BENCH_B)
	$(CC) $(BENCH_CFLAGS) -c $< -o $@

$(BENCH_B)/core: bench/core.c $(BENCH_HEADERS) $(BENCH_B)/shmalloc_impl.o
	$(CC) $(BENCH_CFLAGS) bench/core.c $(BENCH_B)/shmalloc_impl.o $(BENCH_LDFLAGS) -o $@

$(BENCH_B)/scaling: bench/scaling.c $(BENCH_HEADERS) $(BENCH_B)/shmalloc_impl.o
	$(CC) $(BENCH_CFLAGS) bench/scaling.c $(BENCH_B)/shmalloc_impl.o $(BENCH_LDFLAGS) -o $@

# One binary per system allocator, linked ahead of libc so its malloc wins
# (core checks at start-up which library its malloc came from).  A library
# that does not link leaves no binary and a note; run.sh skips it.
$(BENCH_B)/core_%: bench/core.c $(BENCH_HEADERS) $(BENCH_B)/shmalloc_impl.o
	@if printf 'int main(void){return 0;}\n' | $(CC) -x c - $(BENCH_LIB_$*) -o /dev/null 2>/dev/null; then \
	  echo "$(CC) $(BENCH_CFLAGS) -DBENCH_SYSTEM='\"$*\"' bench/core.c ... $(BENCH_LIB_$*) -o $@"; \
	  $(CC) $(BENCH_CFLAGS) -DBENCH_SYSTEM='"$*"' bench/core.c $(BENCH_B)/shmalloc_impl.o \
	    $(BENCH_LDFLAGS) $(BENCH_LIB_$*) -o $@; \
	else rm -f $@; echo "bench: note: $* skipped: $(BENCH_LIB_$*) does not link (apt-get install $(BENCH_PKG_$*))"; fi

.DEFAULT_GOAL := $(bench_saved_goal)
