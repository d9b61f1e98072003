# mk/openmpi.mk - Open MPI's oshmem with shmalloc as its memheap,
# included by the top-level Makefile (which defines CC, B, WARN, SUITE).
#
#   make test-openmpi   builds the memheap component against the installed
#                       Open MPI, runs our OpenSHMEM tests under oshrun with
#                       ptmalloc and with shmalloc (run it under the mpirun lock)
#
# Debian installs Open MPI's internal headers but not two paths they include
# (oshmem/include/shmem.h, ompi/include/mpi.h): a folder of symlinks to the
# installed shmem.h and mpi.h stands in for them.

OMPI_B    = $(B)/openmpi
OMPI_INC  = $(shell mpicc --showme:incdirs 2>/dev/null)
OMPI_TOP  = $(firstword $(OMPI_INC))
OMPI_CFLAGS = -isystem $(OMPI_B)/inc $(foreach d,$(OMPI_TOP)/openshmem $(OMPI_INC),-isystem $(d))
OMPI_HEADERS = $(OMPI_B)/inc/oshmem/include/shmem.h $(OMPI_B)/inc/ompi/include/mpi.h

.PHONY: test-openmpi openmpi-component

openmpi-component: $(OMPI_B)/mca_memheap_shmalloc.so $(OMPI_B)/oshmem_heap

$(OMPI_HEADERS):
	@[ -n "$(OMPI_TOP)" ] || { echo "test-openmpi: mpicc not found (scripts/deps.sh openmpi)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	ln -sf $(OMPI_TOP)/$(notdir $@) $@

# Everything but the component's one symbol stays private (SHMALLOC_STATIC).
$(OMPI_B)/mca_memheap_shmalloc.so: integrations/openmpi/memheap_shmalloc.c shmalloc.h $(OMPI_HEADERS)
	$(CC) $(STD) -O2 -g $(WARN) -fPIC -shared -I. $(OMPI_CFLAGS) $< -loshmem -lopen-pal -o $@

$(OMPI_B)/oshmem_heap: integrations/openmpi/tests/oshmem_heap.c
	@mkdir -p $(OMPI_B)
	oshcc $(STD) -O2 -g $(WARN) $< -o $@

# Then the commands of integrations/openmpi/README.md as written, which
# make test's docs-check lists as not run (tests/checks/docs_check.sh).
test-openmpi: deps-openmpi
	@$(MAKE) --no-print-directory openmpi-component
	integrations/openmpi/test-openmpi.sh $(OMPI_B)
	@$(MAKE) --no-print-directory $(shm_static) $(shm_shared)
	$(MPIRUN_ENV) OMPI_MCA_btl_tcp_if_include=lo UCX_TLS=self,sm DOCS_OPENMPI=1 MAKE="$(MAKE)" B="$(B)" CC="$(CC)" \
	  tests/checks/docs_check.sh integrations/openmpi/README.md

# shmem_malloc + shmem_free, a malloc-heavy program and the fragmentation
# of one random sequence under ptmalloc, buddy and shmalloc (prints figures).
.PHONY: bench-openmpi
bench-openmpi:
	@scripts/deps.sh openmpi
	@$(MAKE) --no-print-directory openmpi-component $(OMPI_B)/bench_memheap
	integrations/openmpi/bench-openmpi.sh $(OMPI_B)

$(OMPI_B)/bench_memheap: integrations/openmpi/bench_memheap.c
	@mkdir -p $(OMPI_B)
	oshcc $(STD) -O2 -g $(WARN) $< -o $@
