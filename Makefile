# shmalloc: `make demo` runs the example, `make test` runs every test
# (scripts/deps.sh installs what they need with apt-get when run as root).

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

# The allocator is compiled once, from shmalloc.c, into libshmalloc, with
# the start-up every transport builds on (transports/common/, public); the
# transport libraries hold their binding and link against it.
HEADERS      = shmalloc.h $(wildcard transports/*.h transports/*/*.h tests/*/*.h tests/*/*/*.h examples/*.h)
ALLOC        = $(B)/libshmalloc.a

# Each test is in the folder of the layer it tests (tests/core/, heap/,
# common/, pthreads/, pmix_ofi/, fork/, sos/): make finds its source by
# name, and it finds the headers tests of several layers share in
# tests/support/.
vpath %.c $(wildcard tests/*/)
$(B)/test_% $(B)/soak_% $(B)/pmix_ofi_worker: private CFLAGS += -Itests/support
COMMON_SRC  := $(wildcard transports/common/*.c)

# A transport is a folder and one line below: $(call transport,NAME,FOLDER)
# makes $(NAME), its library ($(B)/libshmalloc_<folder>.a), of $(NAME_SRC):
# the folder's sources.  The shipped transports' archives also carry the
# start-up (COMMON_SRC), for a program that expands the header itself and
# links no libshmalloc; the fork transport takes it from libshmalloc, as
# one built outside the tree does.
define transport
$(1)_SRC := $$(wildcard $(2)/*.c) $(3)
$(1) := $$(B)/libshmalloc_$(notdir $(2)).a
TRANSPORTS += $(1)
endef
$(eval $(call transport,PTHREADS,transports/pthreads,$(COMMON_SRC)))
$(eval $(call transport,PMIX_OFI,transports/pmix_ofi,$(COMMON_SRC)))
$(eval $(call transport,FORK,tests/fork/transport_fork))
PMIX_FLAGS   = $(shell pkg-config --cflags pmix libfabric 2>/dev/null)
PMIX_LIBS    = $(shell pkg-config --libs pmix libfabric 2>/dev/null)

# Criterion tests: of the core and the heap (linked with the allocator),
# of the pthreads transport and of the heap on pthreads PEs (also with its
# library), and white-box tests that expand the implementation themselves
# to reach its privates (the mapping's also at each other second-level
# count: test_mapping_slN, 2^N).
TLSF_TESTS     = test_tlsf_api test_tlsf_align test_tlsf_realloc test_tlsf_limits test_tlsf_walk \
                 test_tlsf_checker test_tlsf_stress test_tlsf_undo test_overwrite
HEAP_TESTS     = test_separate test_heap_create test_heap_api test_heap_realloc test_heap_sync test_heap_collective \
                 test_heap_no_barrier test_heap_hints test_heap_oom test_heap_report test_heap_env \
                 test_heap_stress test_free_deferred test_spaces
CORE_TESTS     = $(TLSF_TESTS) $(HEAP_TESTS) test_bad_pointer test_bad_input test_threads test_contract test_messages
PTHREADS_TESTS = test_options test_largest_request test_pthreads_data test_pthreads_errors test_pthreads_stress test_pthreads_timeout test_pthreads_teams test_pthreads_spaces test_debug test_order test_sbreak test_grow test_hugepages test_pthreads_deferred
FORK_TESTS     = test_fork test_fork_teams
HOOKS_TESTS    = test_alloc_hooks
WHITEBOX_TESTS = test_corrupt test_mapping test_copy
SL_TESTS       = test_mapping_sl2 test_mapping_sl3 test_mapping_sl4
ADAPTER_TESTS  = test_sos_adapter
# Run again with separate metadata (SHMALLOC_METADATA=separate): data,
# spaces, growth, hints, allocations without a barrier, the break, deferred releases,
# the private memory each PE takes, largest_request's promise.
SEPARATE_TESTS = test_pthreads_data test_pthreads_stress test_pthreads_spaces test_order test_sbreak test_grow \
                 test_pthreads_deferred test_alloc_hooks test_largest_request
TESTS          = $(CORE_TESTS) $(PTHREADS_TESTS) $(FORK_TESTS) $(HOOKS_TESTS) $(WHITEBOX_TESTS) $(SL_TESTS) $(ADAPTER_TESTS)

# The included files define targets too: `make` alone still builds all.
.DEFAULT_GOAL := all
include mk/install.mk
include mk/checks.mk
include mk/bench.mk
include mk/openmpi.mk
include mk/deb.mk

.PHONY: all examples libs demo demo-pmix test-pmix test-slurm test-cluster deps deps-openmpi test \
        run-tests run-check map-check test-asan test-valgrind test-tsan compile-check fuzz poison-check soak clean

all: examples libs
examples: $(B)/hello_pthreads $(B)/spaces_pthreads $(B)/vendor_runtime $(B)/device_runtime
libs: $(ALLOC) $(PTHREADS)

# ---- objects and libraries -------------------------------------------------
$(B)/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(if $(findstring pmix_ofi,$*),$(PMIX_FLAGS)) -c $< -o $@

$(ALLOC): $(B)/shmalloc.o $(COMMON_SRC:%.c=$(B)/%.o)
$(foreach t,$(TRANSPORTS),$(eval $($(t)): $($(t)_SRC:%.c=$(B)/%.o)))
$(B)/lib%.a: # afresh, so a source that is gone leaves no member behind
	rm -f $@ && ar rcs $@ $^

# ---- programs --------------------------------------------------------------
$(B)/hello_pthreads: examples/hello_pthreads.c $(PTHREADS) $(ALLOC)
	$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@
$(B)/spaces_pthreads: examples/spaces.c $(PTHREADS) $(ALLOC) $(HEADERS)
	$(CC) $(CFLAGS) $< $(PTHREADS) $(ALLOC) $(LDLIBS) -o $@

# A runtime that vendors the header expands it itself.
$(B)/vendor_runtime $(B)/device_runtime: $(B)/%: examples/%.c examples/minirt.h shmalloc.h
	@mkdir -p $(B)
	$(CC) $(CFLAGS) $< $(LDLIBS) -o $@

$(addprefix $(B)/,$(CORE_TESTS)): $(B)/%: %.c $(ALLOC) $(HEADERS)
	$(CC) $(CFLAGS) $< $(ALLOC) -lcriterion $(LDLIBS) -o $@

$(addprefix $(B)/,$(PTHREADS_TESTS) soak_pthreads): $(B)/%: %.c $(PTHREADS) $(ALLOC) $(HEADERS)
	$(CC) $(CFLAGS) $< $(PTHREADS) $(ALLOC) -lcriterion $(LDLIBS) -o $@
$(addprefix $(B)/,$(FORK_TESTS)): $(B)/%: %.c $(FORK) $(ALLOC) $(HEADERS)
	$(CC) $(CFLAGS) $< $(FORK) $(ALLOC) -lcriterion $(LDLIBS) -o $@

$(addprefix $(B)/,$(WHITEBOX_TESTS)): $(B)/%: %.c $(HEADERS)
	@mkdir -p $(B)
	$(CC) $(CFLAGS) -Wno-missing-prototypes $< -lcriterion $(LDLIBS) -o $@
$(addprefix $(B)/,$(SL_TESTS)): $(B)/test_mapping_sl%: tests/core/test_mapping.c $(HEADERS)
	@mkdir -p $(B)
	$(CC) $(CFLAGS) -Wno-missing-prototypes -DSHMALLOC_SL_LOG2=$* $< -lcriterion $(LDLIBS) -o $@

# The allocator hooks' test expands the header with counting hooks, which
# the pthreads transport linked with it reaches too.
$(B)/test_alloc_hooks: tests/heap/test_alloc_hooks.c $(PTHREADS) $(HEADERS)
	$(CC) $(CFLAGS) -Wno-missing-prototypes $< $(PTHREADS) -lcriterion $(LDLIBS) -o $@

# The SOS adapter expands the header privately; the test's helpers use the library.
$(B)/test_sos_adapter: tests/sos/test_sos_adapter.c integrations/sos/shmalloc_sos.c integrations/sos/shmalloc_sos.h $(ALLOC) $(HEADERS)
	$(CC) $(CFLAGS) tests/sos/test_sos_adapter.c integrations/sos/shmalloc_sos.c $(ALLOC) -lcriterion $(LDLIBS) -o $@

# The worker (a main and its scenarios' files) links the transport built with
# its test hooks (SHMALLOC_TESTING), which the library leaves out.
PMIX_OFI_TESTING = $(PMIX_OFI_SRC:%.c=$(B)/testing/%.o)
PMIX_OFI_WORKER  = $(wildcard tests/pmix_ofi/pmix_ofi_worker*.c)
$(B)/testing/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DSHMALLOC_TESTING $(PMIX_FLAGS) -c $< -o $@
$(B)/pmix_ofi_worker: $(PMIX_OFI_WORKER) $(PMIX_OFI_TESTING) $(ALLOC) $(HEADERS)
	$(CC) $(CFLAGS) -DSHMALLOC_TESTING $(PMIX_FLAGS) $(filter-out %.h,$^) $(PMIX_LIBS) $(LDLIBS) -o $@
$(B)/hello_pmix_ofi: examples/hello_pmix_ofi.c $(PMIX_OFI) $(ALLOC)
	$(CC) $(CFLAGS) $(PMIX_FLAGS) $^ $(PMIX_LIBS) $(LDLIBS) -o $@
$(B)/spaces_pmix_ofi: examples/spaces.c $(PMIX_OFI) $(ALLOC) $(HEADERS)
	$(CC) $(CFLAGS) -DSPACES_PMIX_OFI $(PMIX_FLAGS) $< $(PMIX_OFI) $(ALLOC) $(PMIX_LIBS) $(LDLIBS) -o $@
# The tests that launch the worker, one suite per concern (pmix_ofi_launch.h).
PMIX_OFI_TESTS = test_pmix_ofi_scenarios test_pmix_ofi_start test_pmix_ofi_faults test_pmix_ofi_threads \
                 test_pmix_ofi_counts test_pmix_ofi_deferred test_pmix_ofi_teams
$(addprefix $(B)/,$(PMIX_OFI_TESTS)): $(B)/%: %.c $(HEADERS)
	@mkdir -p $(B)
	$(CC) $(CFLAGS) $< -lcriterion -o $@

demo: $(B)/hello_pthreads
	./$(B)/hello_pthreads 4

# ---- test suites -----------------------------------------------------------
# Every package a suite needs comes from scripts/deps.sh.
deps:
	@scripts/deps.sh test
deps-openmpi:
	@scripts/deps.sh test openmpi

# Every suite runs through tests/run.sh: a line as it starts, one with its
# result and time as it ends, its output kept in $(B)/logs and shown only
# when it fails, its counts added to RESULTS, and
# a last line "N passed, M failed".  TOTAL=0 (as make test passes it) adds
# the counts without the last line and lets a failing suite not stop the
# others; a target that fails then could not build or run its suites.
RESULTS ?= $(abspath $(B))/results
TOTAL   ?= 1
SUITE    = tests/run.sh $(RESULTS)
NOSTOP   = $(if $(filter 0,$(TOTAL)),|| true)

# Each test binary runs its tests in forked workers.
# Sanitizers abort on their first report, so Criterion counts it as a crash;
# Valgrind writes one log per process, and any non-empty log fails the run.
export ASAN_OPTIONS  = abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS = abort_on_error=1:halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS  = abort_on_error=1:halt_on_error=1
JOBS ?= 2
run-tests: $(addprefix $(B)/,$(TESTS)) examples
	@rm -rf $(B)/vg && mkdir -p $(B)/vg
	@$(if $(filter 0,$(TOTAL)),,rm -f $(RESULTS))
	@status=0; \
	for t in $(TESTS); do $(SUITE) $$t $(RUN) ./$(B)/$$t --jobs $(JOBS) || status=1; done; \
	for t in $(SEPARATE_TESTS); do $(SUITE) $$t-separate env SHMALLOC_METADATA=separate \
	  $(RUN) ./$(B)/$$t --jobs $(JOBS) || status=1; done; \
	$(SUITE) vendor_runtime $(RUN) ./$(B)/vendor_runtime 3 || status=1; \
	$(SUITE) device_runtime tests/checks/device_runtime_check.sh $(RUN) ./$(B)/device_runtime || status=1; \
	$(SUITE) hello_pthreads $(RUN) ./$(B)/hello_pthreads 4 || status=1; \
	$(SUITE) spaces_pthreads $(RUN) ./$(B)/spaces_pthreads 5 || status=1; \
	$(if $(RUN),$(SUITE) valgrind-logs sh -c 'logs=$$(find $(B)/vg -name "*.log" -size +0); \
	  [ -z "$$logs" ] || { cat $$logs; exit 1; }' || status=1;) \
	$(if $(filter 0,$(TOTAL)),true,tests/run.sh $(RESULTS) --total && exit $$status)

# Suites that need root: Slurm's daemons and the cluster's nodes run in
# network namespaces (unshare -n, a private bridge).
ROOT_SUITES = test-slurm test-cluster
SUB = $(MAKE) --no-print-directory -s TOTAL=0
test: deps
	@rm -f $(RESULTS)
	@echo "---- building $(words $(TESTS)) test programs and the examples (quiet unless one fails)"
	@+$(SUB) run-tests || $(SUITE) --failed run-tests
	@+$(SUB) test-pmix || $(SUITE) --failed test-pmix
	@+for t in $(ROOT_SUITES) poison-check; do $(SUB) $$t || $(SUITE) --failed $$t; done
	@for t in cpp-check man-check install-check run-check map-check docs-check bench-check; do $(SUITE) $$t $(MAKE) --no-print-directory $$t; done; true
	@tests/run.sh $(RESULTS) --total

# tests/run.sh itself: its start and result lines, its counts.
run-check:
	@sh tests/checks/run_check.sh

# shmalloc.h's CONTENTS against its banners: each once, all listed, in order.
map-check:
	@sh tests/checks/header_map_check.sh

# ---- the PMIx + libfabric transport: PEs are processes under mpirun ----
MPIRUN_ENV = OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_oob_tcp_if_include=lo FI_PROVIDER=shm IPATH_NO_BACKTRACE=1

demo-pmix: deps $(B)/hello_pmix_ofi
	$(MPIRUN_ENV) timeout 60 mpirun --oversubscribe -np 4 -x FI_PROVIDER ./$(B)/hello_pmix_ofi

# One mpirun at a time: the tests count the files the shm provider leaves.
test-pmix: $(addprefix $(B)/,pmix_ofi_worker $(PMIX_OFI_TESTS) hello_pmix_ofi spaces_pmix_ofi)
	@status=0; for t in $(PMIX_OFI_TESTS); do \
	  $(SUITE) $$t env SHMALLOC_TEST_WORKER=./$(B)/pmix_ofi_worker ./$(B)/$$t --jobs 1 || status=1; done; \
	  $(SUITE) test_pmix_ofi_scenarios-separate env SHMALLOC_METADATA=separate \
	    SHMALLOC_TEST_WORKER=./$(B)/pmix_ofi_worker ./$(B)/test_pmix_ofi_scenarios --jobs 1 || status=1; \
	  test $$status = 0 $(NOSTOP)
	@$(SUITE) hello_pmix_ofi env $(MPIRUN_ENV) timeout 60 mpirun --oversubscribe -np 4 -x FI_PROVIDER \
	  ./$(B)/hello_pmix_ofi $(NOSTOP)
	@$(SUITE) spaces_pmix_ofi env $(MPIRUN_ENV) timeout 60 mpirun --oversubscribe -np 5 -x FI_PROVIDER \
	  ./$(B)/spaces_pmix_ofi $(NOSTOP)
	@$(SUITE) spaces_pmix_ofi-tcp env $(MPIRUN_ENV) FI_PROVIDER="tcp;ofi_rxm" FI_TCP_IFACE=lo timeout 60 \
	  mpirun --oversubscribe -np 4 -x FI_PROVIDER -x FI_TCP_IFACE ./$(B)/spaces_pmix_ofi $(NOSTOP)

# The worker under srun --mpi=pmix, on a one-node Slurm cluster that the
# script starts and stops in a network namespace with only loopback (root).
test-slurm: deps $(B)/pmix_ofi_worker
	@$(SUITE) slurm-check tests/checks/slurm_check.sh $(B)/pmix_ofi_worker $(NOSTOP)

# PEs on several nodes: 2 x 2 PEs, 3 nodes (2+1+1) and 4 x 4 PEs, network
# namespaces on a private bridge that tests/checks/cluster.sh builds (root),
# under mpirun and under srun with one slurmd per node.
test-cluster: deps $(B)/pmix_ofi_worker
	@$(SUITE) cluster-check tests/checks/cluster_check.sh $(B)/pmix_ofi_worker $(NOSTOP)

# ---- the same tests under the sanitizers and Valgrind ----------------------
# Also the PMIx transport's thread and team tests (test_pmix_ofi_threads, _deferred, _teams), worker and
# transport built with ASan and UBSan (under the mpirun lock, as make test).
ASAN = B=build/asan OPT="-O1 -g" SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
test-asan: deps
	@rm -f build/asan/results
	@+$(SUB) run-tests $(ASAN) || tests/run.sh build/asan/results --failed run-tests
	@+$(SUB) build/asan/pmix_ofi_worker build/asan/test_pmix_ofi_threads build/asan/test_pmix_ofi_deferred \
	  build/asan/test_pmix_ofi_teams $(ASAN) || \
	  tests/run.sh build/asan/results --failed test_pmix_ofi_threads
	@for t in test_pmix_ofi_threads test_pmix_ofi_deferred test_pmix_ofi_teams; do tests/run.sh build/asan/results $$t \
	  env SHMALLOC_TEST_WORKER=./build/asan/pmix_ofi_worker ./build/asan/$$t --jobs 1; done; true
	@tests/run.sh build/asan/results --total

# Also the PMIx transport's thread and team tests (test_pmix_ofi_threads, _deferred:
# 4 threads per PE under mpirun; _teams), worker and transport built with TSan, under the
# stand-in runner.  Run it under the mpirun lock, as make test.
TSAN = B=build/tsan OPT="-O1 -g" SAN="-fsanitize=thread"
test-tsan: deps
	@rm -f build/tsan/results
	@+$(SUB) run-tests $(TSAN) || tests/run.sh build/tsan/results --failed run-tests
	@+$(SUB) build/tsan/pmix_ofi_worker build/tsan/test_pmix_ofi_threads build/tsan/test_pmix_ofi_deferred \
	  build/tsan/test_pmix_ofi_teams $(TSAN) || \
	  tests/run.sh build/tsan/results --failed test_pmix_ofi_threads
	@for t in test_pmix_ofi_threads test_pmix_ofi_deferred test_pmix_ofi_teams; do tests/run.sh build/tsan/results $$t \
	  env SHMALLOC_TEST_WORKER=./build/tsan/pmix_ofi_worker ./build/tsan/$$t --jobs 1; done; true
	@tests/run.sh build/tsan/results --total

# Criterion's worker protocol can time out under Valgrind on a loaded
# machine, so these builds use tests/support/criterion_shim.h's plain forked runner.
test-valgrind: deps
	$(MAKE) run-tests B=build/valgrind OPT="-O1 -g" SAN=-DSHMALLOC_TEST_SHIM \
	  JOBS=1 RUN="valgrind -q --trace-children=yes --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite \
	  --log-file=build/valgrind/vg/%p.log"

# The header and the sources warnings-clean as C99 and C11 under gcc and
# clang, and more (tests/checks/compile_check.sh says what).
CHECK_SRC = shmalloc.c $(PTHREADS_SRC) $(PMIX_OFI_SRC) $(FORK_SRC) examples/hello_pmix_ofi.c examples/hello_pthreads.c \
            examples/vendor_runtime.c examples/device_runtime.c examples/spaces.c integrations/sos/shmalloc_sos.c
compile-check: deps-openmpi
	@$(MAKE) --no-print-directory -s $(OMPI_HEADERS)
	@WARN="$(WARN)" PMIX_FLAGS="$(PMIX_FLAGS)" CHECK_SRC="$(sort $(CHECK_SRC))" \
	  TESTING_SRC="$(filter transports/pmix_ofi/%,$(PMIX_OFI_SRC))" \
	  TRANSPORT_SRC="$(sort $(PTHREADS_SRC) $(PMIX_OFI_SRC) $(FORK_SRC))" OMPI_CFLAGS="$(OMPI_CFLAGS)" \
	  tests/checks/compile_check.sh

# SHMALLOC_POISON makes ASan and Valgrind see misuse of symmetric blocks.
POISON_SRC = tests/heap/poison_misuse.c shmalloc.c $(PTHREADS_SRC)
poison-check:
	mkdir -p build/poison
	$(CC) $(STD) -O1 -g $(WARN) -DSHMALLOC_POISON -fsanitize=address -I. $(POISON_SRC) $(LDLIBS) -o build/poison/asan
	$(CC) $(STD) -O1 -g $(WARN) -DSHMALLOC_POISON -I. $(POISON_SRC) $(LDLIBS) -o build/poison/valgrind
	@$(SUITE) poison-check tests/checks/poison_check.sh build/poison/asan build/poison/valgrind $(NOSTOP)

# Long random runs with data verified across PEs; not part of make test.
SOAK_OPS ?= 10000000
SOAK_PMIX_OPS ?= 1000000
soak: deps
	$(MAKE) $(B)/soak_pthreads $(B)/pmix_ofi_worker
	./$(B)/soak_pthreads $(SOAK_OPS) 4
	SHMALLOC_TEST_WORKER_OPS=$(SOAK_PMIX_OPS) $(MPIRUN_ENV) timeout 1800 mpirun --oversubscribe -np 4 \
	  -x FI_PROVIDER -x SHMALLOC_TEST_WORKER_OPS ./$(B)/pmix_ofi_worker stress

# libFuzzer over the TLSF core, from the committed seeds; new inputs go to
# a scratch corpus under build/.  FUZZ_SECONDS=600 make fuzz for longer.
FUZZ_SECONDS ?= 60
fuzz:
	mkdir -p build/fuzz-corpus
	clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  -DSHMALLOC_DEBUG_LEVEL=2 -DSHMALLOC_POISON $(WARN) -Wno-missing-prototypes -I. tests/core/fuzz_tlsf.c -o build/fuzz_tlsf
	./build/fuzz_tlsf -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -artifact_prefix=build/ build/fuzz-corpus tests/core/fuzz_seeds 2>&1 | \
	  grep -E 'DONE|stat::number_of_executed_units|fuzz_tlsf:|ERROR|SUMMARY'; test $${PIPESTATUS[0]} -eq 0

clean:
	rm -rf build
