# mk/install.mk - installing shmalloc, and the check that it installs.
#
#   make install   [PREFIX=/usr/local] [DESTDIR=]   headers, libraries (static
#                  and shared), pkg-config files, CMake package, man pages,
#                  the compiler wrapper shmalloc-cc
#   make uninstall [PREFIX=...] [DESTDIR=]          removes exactly those files,
#                  then the directories install made that are left empty
#   make install-check   installs into a temporary DESTDIR and builds, links
#                  and runs programs against it (tests/checks/test_install.sh)
#
# Included by the top-level Makefile, which provides CC, CFLAGS, B, the
# transports' source lists and the rules for the static libraries.  The PMIx + libfabric transport is
# built only when `pkg-config --exists pmix libfabric` succeeds (force it
# off with HAVE_PMIX_OFI=0).
#
# Installed layout (includedir = $(PREFIX)/include):
#   include/shmalloc.h                         the header itself
#   include/shmalloc/shmalloc.h                a one-line forward to ../shmalloc.h
#   include/shmalloc/transports/shmalloc_*.h   the transport headers and the teams' they include, unchanged
#   include/shmalloc/transports/common/*.h     the API a transport builds on (start.h), unchanged
# The pkg-config and CMake files add -I$(includedir)/shmalloc, so programs
# keep the spellings they use in this tree ("shmalloc.h",
# "transports/shmalloc_pthreads.h"); the transport headers' own
# "../shmalloc.h" reaches the forward.  With -I$(includedir) alone (or none,
# for PREFIX=/usr) <shmalloc.h> and <shmalloc/transports/...> work too.

B           ?= build
PREFIX      ?= /usr/local
DESTDIR     ?=
bindir      ?= $(PREFIX)/bin
includedir  ?= $(PREFIX)/include
libdir      ?= $(PREFIX)/lib
mandir      ?= $(PREFIX)/share/man
pkgconfigdir ?= $(libdir)/pkgconfig
cmakedir    ?= $(libdir)/cmake/shmalloc
INSTALL     ?= install
PKG_CONFIG  ?= pkg-config

# The version is the header's SHMALLOC_VERSION_MAJOR, _MINOR and _PATCH.
shm_version_part = $(shell sed -n 's/^\#define SHMALLOC_VERSION_$(1) \([0-9][0-9]*\)$$/\1/p' shmalloc.h)
shm_major := $(call shm_version_part,MAJOR)
shm_minor := $(call shm_version_part,MINOR)
SHMALLOC_VERSION := $(shm_major).$(shm_minor).$(call shm_version_part,PATCH)
# The soname changes whenever the ABI may: before 1.0 a minor version may
# change it (CHANGELOG.md), so the soname carries it (libshmalloc.so.0.1);
# from 1.0 on, the major version alone.
SHMALLOC_SOVERSION ?= $(if $(filter 0,$(shm_major)),0.$(shm_minor),$(shm_major))

ifeq ($(origin HAVE_PMIX_OFI),undefined)
HAVE_PMIX_OFI := $(shell $(PKG_CONFIG) --exists pmix libfabric 2>/dev/null && echo 1)
endif

# ---- what gets built ------------------------------------------------------
# libshmalloc is the allocator and the start-up transports build on
# (transports/common/); each shared transport library holds its binding
# alone and needs libshmalloc; each static one carries the start-up too (a
# program that expands the header itself links it without libshmalloc).
shm_transports := shmalloc_pthreads $(if $(filter 1,$(HAVE_PMIX_OFI)),shmalloc_pmix_ofi)
shm_all_transports := shmalloc_pthreads shmalloc_pmix_ofi
shm_libs     = shmalloc $(shm_transports)
shm_all_libs = shmalloc $(shm_all_transports)
shm_headers := shmalloc.h transports/shmalloc_teams.h transports/shmalloc_pthreads.h
# The API a transport builds on (internal.h is the shipped transports' own).
shm_common_headers := $(addprefix transports/common/,copy.h map.h start.h wait.h)
shm_static  = $(foreach t,$(shm_libs),$(B)/lib$(t).a)
shm_shared  = $(foreach t,$(shm_libs),$(B)/lib$(t).so.$(SHMALLOC_VERSION))
shm_objs_shmalloc          = shmalloc.c $(COMMON_SRC)
shm_objs_shmalloc_pthreads = $(filter-out $(COMMON_SRC),$(PTHREADS_SRC))
shm_objs_shmalloc_pmix_ofi = $(filter-out $(COMMON_SRC),$(PMIX_OFI_SRC))
# A transport library finds libshmalloc beside itself, wherever the tree
# is moved: a program linked --as-needed that calls nothing of libshmalloc
# does not name it, and a program's rpath does not reach its libraries'
# dependencies.  The loader's own directories need no rpath.
shm_origin = $(if $(filter /lib /usr/lib /lib64 /usr/lib64 /lib/%-linux-gnu /usr/lib/%-linux-gnu,$(libdir)),,-Wl,-rpath,'$$ORIGIN')
shm_ldlibs_shmalloc_pthreads = $(B)/libshmalloc.so.$(SHMALLOC_VERSION) $(shm_origin) -pthread
shm_ldlibs_shmalloc_pmix_ofi = $(B)/libshmalloc.so.$(SHMALLOC_VERSION) $(shm_origin) $(PMIX_LIBS)

$(B)/pic/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(if $(findstring pmix_ofi,$*),$(PMIX_FLAGS)) -fPIC -c $< -o $@

# -z defs: a shared library that links must have every symbol it needs.
.SECONDEXPANSION:
shm_pic = $(addprefix $(B)/pic/,$(patsubst %.c,%.o,$(shm_objs_$(1))))
$(B)/lib%.so.$(SHMALLOC_VERSION): $$(call shm_pic,$$*) \
                                  $$(if $$(filter-out shmalloc,$$*),$(B)/libshmalloc.so.$(SHMALLOC_VERSION))
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,lib$*.so.$(SHMALLOC_SOVERSION) -Wl,-z,defs \
	  $(call shm_pic,$*) $(shm_ldlibs_$*) -o $@

# ---- what gets installed --------------------------------------------------
# The man pages: shmalloc.3 and its aliases (symbolic links to the page
# that describes them, installed as links, as distributions ship them, so
# man -l works on any of them from any directory), shmalloc_start.3 (the
# API a transport builds on), the transports' pages, and shmalloc.7.
shm_man3_aliases := shmem_malloc shmem_free shfree shmem_realloc shrealloc shmem_align \
                    shmemalign shmem_calloc shmem_malloc_with_hints malloc_error \
                    shmalloc_check shmalloc_stats shsbreak shmalloc_pthreads_run shmemx_heap_info \
                    shmemx_free_deferred shmemx_free_deferred_drain shmemx_space_destroy \
                    shmemx_space_malloc shmemx_space_calloc shmemx_space_align shmemx_space_realloc \
                    shmemx_space_malloc_with_hints shmemx_space_of \
                    shmalloc_start_size shmalloc_start_read shmalloc_start_unknown shmalloc_start_map \
                    shmalloc_start_heap shmalloc_start_range shmalloc_map_heap shmalloc_map_release \
                    shmalloc_wait_begin shmalloc_wait_step shmalloc_copy
shm_man3_real     = shmalloc shmemx_space_create shmalloc_start shmalloc_pthreads $(if $(filter 1,$(HAVE_PMIX_OFI)),shmalloc_pmix_ofi)
shm_man3_pages    = $(shm_man3_real) $(shm_man3_aliases)
shm_man7_pages   := shmalloc
shm_pc_name_shmalloc_pthreads := shmalloc-pthreads
shm_pc_name_shmalloc_pmix_ofi := shmalloc-pmix-ofi

# Every file install may put, for one transport list: uninstall and
# install-check use the full list, so what install wrote always goes.
shm_lib_files = $(foreach t,$(1),lib$(t).a lib$(t).so lib$(t).so.$(SHMALLOC_SOVERSION) lib$(t).so.$(SHMALLOC_VERSION))
shm_files = $(includedir)/shmalloc.h $(includedir)/shmalloc/shmalloc.h \
            $(foreach t,shmalloc_teams $(1),$(includedir)/shmalloc/transports/$(t).h) \
            $(addprefix $(includedir)/shmalloc/,$(shm_common_headers)) \
            $(addprefix $(libdir)/,$(call shm_lib_files,shmalloc $(1))) \
            $(pkgconfigdir)/shmalloc.pc $(foreach t,$(1),$(pkgconfigdir)/$(shm_pc_name_$(t)).pc) \
            $(cmakedir)/shmallocConfig.cmake $(cmakedir)/shmallocConfigVersion.cmake \
            $(foreach p,$(2),$(mandir)/man3/$(p).3) $(foreach p,$(shm_man7_pages),$(mandir)/man7/$(p).7) \
            $(bindir)/shmalloc-cc $(mandir)/man1/shmalloc-cc.1
shm_installed     = $(call shm_files,$(shm_transports),$(shm_man3_pages))
shm_all_installed = $(call shm_files,$(shm_all_transports),$(sort $(shm_man3_pages)))

# Generated with the paths of this PREFIX, into $(B)/gen.
shm_gen = $(B)/gen
# In a .pc file, a directory under the prefix is written from ${prefix}.
shm_pcdir = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
shm_relpath = $(shell realpath -m --relative-to=$(2) $(1))

.PHONY: install uninstall install-check shared-libs static-libs shm-generate print-install-files

static-libs: $(shm_static)
shared-libs: $(shm_shared)

shm-generate:
	@mkdir -p $(shm_gen)
	@printf '%s\n' '/* Installed by shmalloc.  The headers in transports/ include' \
	  '   "../shmalloc.h", which is this file; it leads on to the real header. */' \
	  '#include "../shmalloc.h"' > $(shm_gen)/shmalloc-forward.h
	@printf '%s\n' 'prefix=$(PREFIX)' 'includedir=$(call shm_pcdir,$(includedir))' '' \
	  'Name: shmalloc' \
	  'Description: symmetric-heap allocator for OpenSHMEM runtimes (single header)' \
	  'Version: $(SHMALLOC_VERSION)' \
	  'Cflags: -I$${includedir}/shmalloc' > $(shm_gen)/shmalloc.pc
	@printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(call shm_pcdir,$(libdir))' '' \
	  'Name: shmalloc-pthreads' \
	  'Description: shmalloc with its pthreads transport: PEs are threads of one process' \
	  'Version: $(SHMALLOC_VERSION)' \
	  'Requires: shmalloc = $(SHMALLOC_VERSION)' \
	  'Libs: -L$${libdir} -lshmalloc_pthreads -lshmalloc -pthread' > $(shm_gen)/shmalloc-pthreads.pc
	@printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(call shm_pcdir,$(libdir))' '' \
	  'Name: shmalloc-pmix-ofi' \
	  'Description: shmalloc with its PMIx + libfabric transport: PEs are processes' \
	  'Version: $(SHMALLOC_VERSION)' \
	  'Requires: shmalloc = $(SHMALLOC_VERSION), pmix, libfabric' \
	  'Libs: -L$${libdir} -lshmalloc_pmix_ofi -lshmalloc' > $(shm_gen)/shmalloc-pmix-ofi.pc
	@for f in shmallocConfig shmallocConfigVersion; do \
	  sed -e 's|@SHMALLOC_VERSION@|$(SHMALLOC_VERSION)|g' \
	      -e 's|@SHMALLOC_VERSION_MAJOR@|$(shm_major)|g' \
	      -e 's|@SHMALLOC_VERSION_MINOR@|$(shm_minor)|g' \
	      -e 's|@SHMALLOC_SOVERSION@|$(SHMALLOC_SOVERSION)|g' \
	      -e 's|@SHMALLOC_REL_INCLUDEDIR@|$(call shm_relpath,$(includedir),$(cmakedir))|g' \
	      -e 's|@SHMALLOC_REL_LIBDIR@|$(call shm_relpath,$(libdir),$(cmakedir))|g' \
	      cmake/$$f.cmake.in > $(shm_gen)/$$f.cmake || exit 1; done
	@sed -e 's|@SHMALLOC_VERSION@|$(SHMALLOC_VERSION)|g' \
	    -e 's|@SHMALLOC_TRANSPORTS@|$(patsubst shmalloc_%,%,$(shm_transports))|g' \
	    -e 's|@SHMALLOC_REL_INCLUDEDIR@|$(call shm_relpath,$(includedir),$(bindir))|g' \
	    -e 's|@SHMALLOC_REL_LIBDIR@|$(call shm_relpath,$(libdir),$(bindir))|g' \
	    scripts/shmalloc-cc.in > $(shm_gen)/shmalloc-cc

install: $(shm_static) $(shm_shared) shm-generate
	$(INSTALL) -d $(addprefix $(DESTDIR),$(shm_dirs))
	$(INSTALL) -m 644 shmalloc.h $(DESTDIR)$(includedir)/shmalloc.h
	$(INSTALL) -m 644 $(shm_gen)/shmalloc-forward.h $(DESTDIR)$(includedir)/shmalloc/shmalloc.h
	$(INSTALL) -m 644 $(foreach t,shmalloc_teams $(shm_transports),transports/$(t).h) $(DESTDIR)$(includedir)/shmalloc/transports/
	$(INSTALL) -m 644 $(shm_common_headers) $(DESTDIR)$(includedir)/shmalloc/transports/common/
	$(INSTALL) -m 644 $(shm_static) $(DESTDIR)$(libdir)/
	$(INSTALL) -m 755 $(shm_shared) $(DESTDIR)$(libdir)/
	@set -e; for t in $(shm_libs); do \
	  echo "ln -sf lib$$t.so.$(SHMALLOC_VERSION) lib$$t.so.$(SHMALLOC_SOVERSION); ln -sf lib$$t.so.$(SHMALLOC_SOVERSION) lib$$t.so"; \
	  ln -sf lib$$t.so.$(SHMALLOC_VERSION) $(DESTDIR)$(libdir)/lib$$t.so.$(SHMALLOC_SOVERSION); \
	  ln -sf lib$$t.so.$(SHMALLOC_SOVERSION) $(DESTDIR)$(libdir)/lib$$t.so; done
	$(INSTALL) -m 644 $(shm_gen)/shmalloc.pc $(foreach t,$(shm_transports),$(shm_gen)/$(shm_pc_name_$(t)).pc) \
	  $(DESTDIR)$(pkgconfigdir)/
	$(INSTALL) -m 644 $(shm_gen)/shmallocConfig.cmake $(shm_gen)/shmallocConfigVersion.cmake $(DESTDIR)$(cmakedir)/
	$(INSTALL) -m 644 $(foreach p,$(shm_man3_real),man/$(p).3) $(DESTDIR)$(mandir)/man3/
	@set -e; for p in $(shm_man3_aliases); do \
	  echo "ln -sf $$(readlink man/$$p.3) $(DESTDIR)$(mandir)/man3/$$p.3"; \
	  ln -sf $$(readlink man/$$p.3) $(DESTDIR)$(mandir)/man3/$$p.3; done
	$(INSTALL) -m 644 $(foreach p,$(shm_man7_pages),man/$(p).7) $(DESTDIR)$(mandir)/man7/
	$(INSTALL) -m 755 $(shm_gen)/shmalloc-cc $(DESTDIR)$(bindir)/
	$(INSTALL) -m 644 man/shmalloc-cc.1 $(DESTDIR)$(mandir)/man1/

# install's files, then each directory install made and its parents while
# they are empty, up to PREFIX (with DESTDIR, up to DESTDIR: install made
# the parents inside it); a directory that holds another file stays.
shm_dirs = $(bindir) $(includedir)/shmalloc/transports/common $(libdir) $(pkgconfigdir) $(cmakedir) \
           $(mandir)/man1 $(mandir)/man3 $(mandir)/man7
shm_top  = $(if $(DESTDIR),$(DESTDIR)/*,$(PREFIX)|$(PREFIX)/*)
uninstall:
	rm -f $(addprefix $(DESTDIR),$(shm_all_installed))
	@for d in $(addprefix $(DESTDIR),$(shm_dirs)); do \
	  while case $$d in $(shm_top)) rmdir "$$d" 2>/dev/null;; *) false;; esac; do d=$${d%/*}; done; done

# The files install puts, one per line, with DESTDIR (for install-check).
print-install-files:
	@printf '%s\n' $(addprefix $(DESTDIR),$(shm_installed))

# The libraries are built here first, so a parallel make does not build
# them twice at once (here and in the script's own make install).
install-check: $(shm_static) $(shm_shared)
	@scripts/deps.sh test
	@MAKE="$(MAKE)" MAKEFILE="$(firstword $(MAKEFILE_LIST))" B="$(B)" CC="$(CC)" \
	  HAVE_PMIX_OFI="$(HAVE_PMIX_OFI)" sh tests/checks/test_install.sh
