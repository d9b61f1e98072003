# shmalloc: `make demo` runs the example, `make test` runs every test
# (installing what it needs with apt-get when run as root).

SHELL   := /bin/bash
CC      ?= cc
OPT     ?= -O2 -g
STD     ?= -std=c99
WARN     = -Wall -Wextra -Wpedantic -Wshadow -Wundef -Wconversion -Wstrict-prototypes -Wmissing-prototypes -Werror
SAN     ?=
CFLAGS   = $(STD) $(OPT) $(WARN) $(SAN) -I.
LDLIBS   = -pthread
B       ?= build
RUN     ?=
TESTS    = test_tlsf test_corrupt test_heap test_bad_input test_threads test_pthreads test_debug test_order test_sbreak test_grow test_hugepages
HEADERS  = shmalloc.h transports/shmalloc_pthreads.h transports/shmalloc_map.h
PTHREADS = transports/shmalloc_pthreads.c

include mk/install.mk
include mk/bench.mk

.PHONY: all examples libs demo demo-pmix test-pmix test-slurm test-sos bench-sos test-cluster deps test run-tests test-asan test-valgrind test-tsan compile-check fuzz poison-check soak clean

all: examples libs
examples: $(B)/hello_pthreads $(B)/vendor_runtime
libs: $(B)/libshmalloc_pthreads.a

$(B):
	mkdir -p $(B)

$(B)/%.o: transports/%.c $(HEADERS) | $(B)
	$(CC) $(CFLAGS) -c $< -o $@

$(B)/libshmalloc_pthreads.a: $(B)/shmalloc_pthreads.o
	ar rcs $@ $^

$(B)/hello_pthreads: examples/hello_pthreads.c $(B)/libshmalloc_pthreads.a
	$(CC) $(CFLAGS) $< $(B)/libshmalloc_pthreads.a $(LDLIBS) -o $@

$(B)/vendor_runtime: examples/vendor_runtime.c shmalloc.h | $(B)
	$(CC) $(CFLAGS) $< $(LDLIBS) -o $@

$(B)/test_tlsf: tests/test_tlsf.c tests/shmalloc_impl.c shmalloc.h | $(B)
	$(CC) $(CFLAGS) tests/test_tlsf.c tests/shmalloc_impl.c -lcriterion $(LDLIBS) -o $@

$(B)/test_corrupt: tests/test_corrupt.c shmalloc.h | $(B)
	$(CC) $(CFLAGS) -Wno-missing-prototypes $< -lcriterion $(LDLIBS) -o $@

$(B)/test_heap: tests/test_heap.c tests/shmalloc_impl.c shmalloc.h | $(B)
	$(CC) $(CFLAGS) tests/test_heap.c tests/shmalloc_impl.c -lcriterion $(LDLIBS) -o $@

$(B)/test_bad_input: tests/test_bad_input.c tests/shmalloc_impl.c shmalloc.h | $(B)
	$(CC) $(CFLAGS) tests/test_bad_input.c tests/shmalloc_impl.c -lcriterion $(LDLIBS) -o $@

$(B)/test_threads: tests/test_threads.c tests/shmalloc_impl.c shmalloc.h | $(B)
	$(CC) $(CFLAGS) tests/test_threads.c tests/shmalloc_impl.c -lcriterion $(LDLIBS) -o $@

$(B)/test_pthreads: tests/test_pthreads.c $(B)/libshmalloc_pthreads.a
	$(CC) $(CFLAGS) $< $(B)/libshmalloc_pthreads.a -lcriterion $(LDLIBS) -o $@

$(B)/test_debug: tests/test_debug.c $(B)/libshmalloc_pthreads.a
	$(CC) $(CFLAGS) $< $(B)/libshmalloc_pthreads.a -lcriterion $(LDLIBS) -o $@

$(B)/test_order: tests/test_order.c $(B)/libshmalloc_pthreads.a
	$(CC) $(CFLAGS) $< $(B)/libshmalloc_pthreads.a -lcriterion $(LDLIBS) -o $@

$(B)/test_sbreak: tests/test_sbreak.c $(B)/libshmalloc_pthreads.a
	$(CC) $(CFLAGS) $< $(B)/libshmalloc_pthreads.a -lcriterion $(LDLIBS) -o $@
$(B)/test_grow: tests/test_grow.c $(B)/libshmalloc_pthreads.a
	$(CC) $(CFLAGS) $< $(B)/libshmalloc_pthreads.a -lcriterion $(LDLIBS) -o $@
$(B)/test_hugepages: tests/test_hugepages.c $(B)/libshmalloc_pthreads.a
	$(CC) $(CFLAGS) $< $(B)/libshmalloc_pthreads.a -lcriterion $(LDLIBS) -o $@

demo: $(B)/hello_pthreads
	./$(B)/hello_pthreads 4

# ---- the PMIx + libfabric transport: PEs are processes under mpirun ----
PMIX_FLAGS = $(shell pkg-config --cflags --libs pmix libfabric 2>/dev/null)
MPIRUN_ENV = OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_oob_tcp_if_include=lo FI_PROVIDER=shm IPATH_NO_BACKTRACE=1

$(B)/pmix_ofi_worker: tests/pmix_ofi_worker.c transports/shmalloc_pmix_ofi.c transports/shmalloc_pmix_ofi.h transports/shmalloc_map.h shmalloc.h | $(B)
	$(CC) $(CFLAGS) tests/pmix_ofi_worker.c transports/shmalloc_pmix_ofi.c $(PMIX_FLAGS) $(LDLIBS) -o $@

$(B)/hello_pmix_ofi: examples/hello_pmix_ofi.c transports/shmalloc_pmix_ofi.c transports/shmalloc_pmix_ofi.h transports/shmalloc_map.h shmalloc.h | $(B)
	$(CC) $(CFLAGS) examples/hello_pmix_ofi.c transports/shmalloc_pmix_ofi.c $(PMIX_FLAGS) -o $@

$(B)/test_pmix_ofi: tests/test_pmix_ofi.c | $(B)
	$(CC) $(CFLAGS) $< -lcriterion -o $@

demo-pmix: deps $(B)/hello_pmix_ofi
	$(MPIRUN_ENV) timeout 60 mpirun --oversubscribe -np 4 -x FI_PROVIDER ./$(B)/hello_pmix_ofi

# The same worker under srun --mpi=pmix, on a one-node Slurm cluster that
# the script starts and stops in a network namespace with only loopback.
SLURM_DEPS = @if ! command -v slurmctld >/dev/null 2>&1; then \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm >/dev/null; }; fi
test-slurm: deps $(B)/pmix_ofi_worker
	$(SLURM_DEPS)
	tests/slurm_check.sh $(B)/pmix_ofi_worker

# PEs on several nodes: 2 nodes x 2 PEs and 3 nodes (2+1+1), network
# namespaces on a private bridge that tests/cluster.sh builds (as root),
# under mpirun and under srun with one slurmd per node.
test-cluster: deps $(B)/pmix_ofi_worker
	$(SLURM_DEPS)
	@command -v ip >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 >/dev/null
	tests/cluster_check.sh $(B)/pmix_ofi_worker

# One mpirun at a time: the tests count the files the shm provider leaves.
test-pmix: $(B)/pmix_ofi_worker $(B)/test_pmix_ofi $(B)/hello_pmix_ofi
	SHMALLOC_WORKER=./$(B)/pmix_ofi_worker ./$(B)/test_pmix_ofi --jobs 1
	$(MPIRUN_ENV) timeout 60 mpirun --oversubscribe -np 4 -x FI_PROVIDER ./$(B)/hello_pmix_ofi >/dev/null

# Sandia OpenSHMEM built stock and with shmalloc (integrations/sos), its
# make check and our heap tests on both, side by side.  SOS_SRC: a tarball.
SOS_SRC ?= ../shared/sos/sos-src.tar.gz
SOS_DEPS = autoconf automake libtool libhwloc-dev
test-sos bench-sos: deps
	@[ -f "$(SOS_SRC)" ] || { echo "$@: SOS_SRC=$(SOS_SRC) is not a file" >&2; exit 1; }
	@if ! command -v autoreconf >/dev/null 2>&1 || ! command -v libtoolize >/dev/null 2>&1 || \
	    ! pkg-config --exists hwloc 2>/dev/null; then \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SOS_DEPS) >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SOS_DEPS) >/dev/null; }; fi
	SOS_BENCH=$(if $(filter bench-sos,$@),1,0) integrations/sos/test-sos.sh $(SOS_SRC) $(B)/sos

# Criterion is the one package a fresh Debian machine lacks.
deps:
	@if ! printf '#include <criterion/criterion.h>\n' | $(CC) -E -x c - >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libcriterion-dev >/dev/null; \
	  else echo "make test needs libcriterion-dev (apt-get install libcriterion-dev, as root)" >&2; exit 1; fi; \
	fi
	@if ! pkg-config --exists pmix libfabric 2>/dev/null || ! command -v mpirun >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pkgconf libpmix-dev libfabric-dev openmpi-bin >/dev/null || \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pkgconf libpmix-dev libfabric-dev openmpi-bin >/dev/null; }; \
	  else echo "make test needs libpmix-dev libfabric-dev openmpi-bin (apt-get install, as root)" >&2; exit 1; fi; \
	fi
	@if [ -n "$(NEED)" ] && ! command -v $(NEED) >/dev/null 2>&1; then \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(NEED) >/dev/null; fi

# Each test binary runs its tests in forked workers; a failure stops the run.
# Sanitizers abort on their first report, so Criterion counts it as a crash;
# Valgrind writes one log per process, and any non-empty log fails the run.
export ASAN_OPTIONS  = abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS = abort_on_error=1:halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS  = abort_on_error=1:halt_on_error=1
JOBS ?= 2
run-tests: $(addprefix $(B)/,$(TESTS)) examples
	@rm -rf $(B)/vg && mkdir -p $(B)/vg
	@set -e; for t in $(TESTS); do echo "== $$t"; $(RUN) ./$(B)/$$t --jobs $(JOBS); done
	$(RUN) ./$(B)/vendor_runtime 3
	$(RUN) ./$(B)/hello_pthreads 4 >/dev/null
	@if [ -n "$$(find $(B)/vg -name '*.log' -size +0)" ]; then \
	  cat $$(find $(B)/vg -name '*.log' -size +0); echo "valgrind reported errors" >&2; exit 1; fi

test: deps
	$(MAKE) run-tests
	$(MAKE) test-pmix
	$(MAKE) test-slurm
	$(MAKE) test-cluster
	$(MAKE) poison-check
	$(MAKE) cpp-check man-check install-check

# Also the PMIx transport's thread tests, worker and transport built with
# ASan and UBSan (under the mpirun lock, as make test).
ASAN = B=build/asan OPT="-O1 -g" SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
test-asan: deps
	$(MAKE) run-tests $(ASAN)
	$(MAKE) build/asan/pmix_ofi_worker build/asan/test_pmix_ofi $(ASAN)
	SHMALLOC_WORKER=./build/asan/pmix_ofi_worker ./build/asan/test_pmix_ofi --jobs 1 --filter '*thread*'

# Also the PMIx transport's thread tests (4 threads per PE under mpirun),
# worker and transport built with TSan; the stand-in runner selects them by
# the substring "thread".  Run it under the mpirun lock, as make test.
TSAN = B=build/tsan OPT="-O1 -g" SAN="-fsanitize=thread"
test-tsan: deps
	$(MAKE) run-tests $(TSAN)
	$(MAKE) build/tsan/pmix_ofi_worker build/tsan/test_pmix_ofi $(TSAN)
	SHMALLOC_WORKER=./build/tsan/pmix_ofi_worker ./build/tsan/test_pmix_ofi --jobs 1 thread

# Criterion's worker protocol can time out under Valgrind on a loaded
# machine, so these builds use tests/criterion_shim.h's plain forked runner.
test-valgrind: deps
	$(MAKE) deps NEED=valgrind
	$(MAKE) run-tests B=build/valgrind OPT="-O1 -g" SAN=-DSHMALLOC_TEST_SHIM \
	  JOBS=1 RUN="valgrind -q --trace-children=yes --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite \
	  --log-file=build/valgrind/vg/%p.log"

# The header warnings-clean as C99 and C11 under gcc and clang, and its
# declarations (with the transport's) as C++17 under g++ and clang++.
compile-check:
	@set -e; for cc in gcc clang; do for std in c99 c11; do \
	  for v in "" -DSHMALLOC_STATIC -DSHMALLOC_NO_SHMEM_NAMES "-DSHMALLOC_DEBUG=3 -DSHMALLOC_SL_LOG2=4"; do \
	    echo "$$cc -std=$$std $$v"; \
	    $$cc -std=$$std $(WARN) $$v -I. -c tests/shmalloc_impl.c -o /dev/null; done; \
	  $$cc -std=$$std $(WARN) -I. -c $(PTHREADS) -o /dev/null; \
	  $$cc -std=$$std $(WARN) -I. $(shell pkg-config --cflags pmix libfabric) -c transports/shmalloc_pmix_ofi.c -o /dev/null; \
	  $$cc -std=$$std $(WARN) -I. -c examples/hello_pmix_ofi.c -o /dev/null; \
	  $$cc -std=$$std $(WARN) -I. -c examples/hello_pthreads.c -o /dev/null; \
	  $$cc -std=$$std $(WARN) -I. -c examples/vendor_runtime.c -o /dev/null; done; done
	@set -e; for cxx in g++ clang++; do echo "$$cxx -std=c++17"; \
	  printf '#include "shmalloc.h"\n#include "transports/shmalloc_pthreads.h"\nint main() { return shmem_malloc(0) != nullptr; }\n' | \
	  $$cxx -std=c++17 -Wall -Wextra -Wpedantic -Wshadow -Wundef -Wconversion -Werror -I. -x c++ -c - -o /dev/null; done
	@set -e; for cc in gcc clang; do echo "$$cc: the header, then a runtime's own shmem.h hints"; \
	  printf '#define SHMALLOC_NO_SHMEM_NAMES\n#include "shmalloc.h"\n#define SHMEM_MALLOC_ATOMICS_REMOTE (1l<<0)\n#define SHMEM_MALLOC_SIGNAL_REMOTE (1l<<1)\nlong hints(void);\nlong hints(void) { return SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE; }\n' | \
	  $$cc -std=c99 $(WARN) -I. -x c -c - -o /dev/null; done
	@echo "compile-check: all clean"

# SHMALLOC_POISON makes ASan and Valgrind see misuse of symmetric blocks.
POISON_SRC = tests/poison_misuse.c $(PTHREADS)
poison-check:
	mkdir -p build/poison
	$(CC) $(STD) -O1 -g $(WARN) -DSHMALLOC_POISON -fsanitize=address -I. $(POISON_SRC) $(LDLIBS) -o build/poison/asan
	$(CC) $(STD) -O1 -g $(WARN) -DSHMALLOC_POISON -I. $(POISON_SRC) $(LDLIBS) -o build/poison/valgrind
	tests/poison_check.sh build/poison/asan build/poison/valgrind

# Long random runs with data verified across PEs; not part of make test.
SOAK_OPS ?= 10000000
SOAK_PMIX_OPS ?= 1000000
soak: deps
	$(MAKE) $(B)/soak_pthreads $(B)/pmix_ofi_worker
	./$(B)/soak_pthreads $(SOAK_OPS) 4
	SHMALLOC_WORKER_OPS=$(SOAK_PMIX_OPS) $(MPIRUN_ENV) timeout 1800 mpirun --oversubscribe -np 4 \
	  -x FI_PROVIDER -x SHMALLOC_WORKER_OPS ./$(B)/pmix_ofi_worker stress

$(B)/soak_pthreads: tests/soak_pthreads.c $(B)/libshmalloc_pthreads.a
	$(CC) $(CFLAGS) $< $(B)/libshmalloc_pthreads.a $(LDLIBS) -o $@

# libFuzzer over the TLSF core, from the committed seeds; new inputs go to
# a scratch corpus under build/.  FUZZ_SECONDS=600 make fuzz for longer.
FUZZ_SECONDS ?= 60
fuzz:
	mkdir -p build/fuzz-corpus
	clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  -DSHMALLOC_DEBUG=2 -DSHMALLOC_POISON $(WARN) -Wno-missing-prototypes -I. tests/fuzz_tlsf.c tests/shmalloc_impl.c -o build/fuzz_tlsf
	./build/fuzz_tlsf -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -artifact_prefix=build/ build/fuzz-corpus tests/fuzz_seeds 2>&1 | \
	  grep -E 'DONE|stat::number_of_executed_units|fuzz_tlsf:|ERROR|SUMMARY'; test $${PIPESTATUS[0]} -eq 0

clean:
	rm -rf build
