# mk/checks.mk - the checks of the documents, the man pages and the C++
# declarations, included by the top-level Makefile after mk/install.mk
# (whose libraries and page lists they use).  Their scripts: tests/checks/.
#
#   make docs-check      runs every command block of the READMEs and the man
#                  pages' EXAMPLES as written, and compares their variables
#                  and transport contract with the header (docs_check.sh)
#   make man-check       lints the man pages and renders each with man -l
#   make cpp-check       the headers as C++11..C++20 with g++ and clang++,
#                  then builds and runs examples/hello_cpp.cpp

.PHONY: docs-check man-check cpp-check

# The documents' commands reuse the libraries and examples built here; their
# mpirun runs with the Makefile's loopback settings and FI_PROVIDER=shm.
docs-check: $(shm_static) $(shm_shared) $(B)/hello_pthreads
	@scripts/deps.sh test
	@$(MPIRUN_ENV) MAKE="$(MAKE)" B="$(B)" CC="$(CC)" tests/checks/docs_check.sh

# Every page install puts, and no other in man/.
man-check:
	@scripts/deps.sh test
	@tests/checks/man_check.sh $(sort $(shm_man3_pages))

# The C++ example is linked with the library the Makefile builds as C.
# make's own default CXX is g++ already.
CXX ?= g++
shm_cxx_warn = -Wall -Wextra -Wpedantic -Wshadow -Wundef -Wconversion -Werror
shm_cxx_transports = shmalloc_pthreads.h $(if $(wildcard transports/shmalloc_pmix_ofi.h),shmalloc_pmix_ofi.h) \
                     $(patsubst transports/%,%,$(shm_common_headers))

$(B)/hello_cpp: examples/hello_cpp.cpp $(PTHREADS) $(ALLOC) $(shm_headers)
	$(CXX) -std=c++11 $(OPT) $(shm_cxx_warn) -I. $< $(PTHREADS) $(ALLOC) -pthread -o $@

cpp-check: $(B)/hello_cpp
	@scripts/deps.sh test
	@B="$(B)" CXX_WARN="$(shm_cxx_warn)" tests/checks/cpp_check.sh $(shm_cxx_transports)
	$(abspath $(B)/hello_cpp) 4
	@echo "cpp-check: all clean"
