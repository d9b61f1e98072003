#!/bin/sh
# compile_check.sh - the header and every source warnings-clean as C99 and
# C11 under gcc and clang, the declarations as C++17, the #error of a lone
# allocator hook, what the transports may call, the Open MPI memheap
# component; `make compile-check`, which passes in the environment:
#   WARN          the warning flags (with -Werror)
#   PMIX_FLAGS    pkg-config's flags for pmix and libfabric
#   CHECK_SRC     every source compiled on its own: the library, the
#                 transports, the examples, the SOS adapter
#   TESTING_SRC   the sources compiled again with -DSHMALLOC_TESTING
#   TRANSPORT_SRC the transports' sources (their calls are checked)
#   OMPI_CFLAGS   Open MPI's include flags (its headers staged by make)
set -e
cd "$(dirname "$0")/../.."

for cc in gcc clang; do for std in c99 c11; do
    for v in "" -DSHMALLOC_STATIC -DSHMALLOC_NO_SHMEM_NAMES "-DSHMALLOC_DEBUG_LEVEL=3 -DSHMALLOC_SL_LOG2=4"; do
        echo "$cc -std=$std $v"
        $cc -std=$std $WARN $v -I. -c shmalloc.c -o /dev/null
    done
    for f in $CHECK_SRC; do $cc -std=$std $WARN -I. $PMIX_FLAGS -c $f -o /dev/null; done
    for f in $TESTING_SRC; do $cc -std=$std $WARN -DSHMALLOC_TESTING -I. $PMIX_FLAGS -c $f -o /dev/null; done
done; done

for cxx in g++ clang++; do
    echo "$cxx -std=c++17"
    printf '#include "shmalloc.h"\n#include "transports/shmalloc_pthreads.h"\nint main() { return shmem_malloc(0) != nullptr; }\n' |
        $cxx -std=c++17 -Wall -Wextra -Wpedantic -Wshadow -Wundef -Wconversion -Werror -I. -x c++ -c - -o /dev/null
done

for cc in gcc clang; do
    echo "$cc: the header, then a runtime's own shmem.h hints"
    printf '#define SHMALLOC_NO_SHMEM_NAMES\n#include "shmalloc.h"\n#define SHMEM_MALLOC_ATOMICS_REMOTE (1l<<0)\n#define SHMEM_MALLOC_SIGNAL_REMOTE (1l<<1)\nlong hints(void);\nlong hints(void) { return SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE; }\n' |
        $cc -std=c99 $WARN -I. -x c -c - -o /dev/null
done

for cc in gcc clang; do for hook in MALLOC FREE; do
    echo "$cc: SHMALLOC_$hook alone is an #error"
    err=$(printf '#define SHMALLOC_%s(x) (x)\n#define SHMALLOC_IMPLEMENTATION\n#include "shmalloc.h"\n' $hook |
        $cc -std=c99 $WARN -I. -x c -c - -o /dev/null 2>&1) && exit 1
    echo "$err" | grep -q 'define SHMALLOC_MALLOC and SHMALLOC_FREE together'
done; done

# A pattern found (grep's lines are printed) fails the check.
echo "the transports' own memory only through shmalloc_mem_alloc (libfabric frees its own)"
if grep -nE '(^|[^_[:alnum:]])(malloc|calloc|realloc|free|strdup|strndup|posix_memalign|aligned_alloc) *\(' \
        $TRANSPORT_SRC | grep -v 'fi_freeinfo frees it'; then exit 1; fi
echo "the library and the transports print only through the output hook (their tables of messages)"
if grep -nE '(^|[^_[:alnum:]])(printf|vprintf|fprintf|vfprintf|dprintf|puts|fputs|putchar|fputc|putc|fwrite|perror) *\(' \
        shmalloc.h $TRANSPORT_SRC | grep -v 'the default output'; then exit 1; fi

for cc in gcc clang; do for std in c99 c11; do
    echo "$cc -std=$std the Open MPI memheap component"
    $cc -std=$std $WARN -fPIC -I. $OMPI_CFLAGS -c integrations/openmpi/memheap_shmalloc.c -o /dev/null
done; done
echo "compile-check: all clean"
