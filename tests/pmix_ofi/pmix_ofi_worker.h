/* pmix_ofi_worker.h - what the worker's files share: this PE's rank and
   the number of PEs, the record of failed checks, the helpers every
   scenario uses (defined in pmix_ofi_worker.c), and the scenarios, each
   defined in the file of its concern:

     pmix_ofi_worker.c          main, the helpers, faults and reports
     pmix_ofi_worker_all.c      the seven scenarios of "all"
     pmix_ofi_worker_grow.c     grow, bad_grow and largest
     pmix_ofi_worker_threads.c  threads
     pmix_ofi_worker_counts.c   counts, against the cost model
     pmix_ofi_worker_deferred.c deferred (shmemx_free_deferred from threads)
     pmix_ofi_worker_pingpong.c pingpong (same-node puts a peer clears)
     pmix_ofi_worker_overwrite.c overwrite (a peer's put past a block's end)
     pmix_ofi_worker_teams.c    teams, teams_concurrent, team_skip,
                                team_heaps, spaces, space_outsider,
                                teams_crossed, team_messages,
                                teams_across_nodes */
#ifndef SHMALLOC_PMIX_OFI_WORKER_H
#define SHMALLOC_PMIX_OFI_WORKER_H

#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* usleep */
#endif
#include "transports/shmalloc_pmix_ofi.h"

#include <stddef.h>
#include <stdint.h>

extern int me, npes, failures;

/* Records a failed check made on `line`, printf-style. */
#if defined(__GNUC__) || defined(__clang__)
void fail(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#else
void fail(int line, const char *fmt, ...);
#endif

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) fail(__LINE__, "%s is false (malloc_error %ld)", #cond, malloc_error); \
    } while (0)

#define CHECK_EQ(got, want)                                                              \
    do {                                                                                 \
        long long got_ = (long long)(got), want_ = (long long)(want);                    \
        if (got_ != want_) fail(__LINE__, "%s is %lld, expected %s = %lld", #got, got_, #want, want_); \
    } while (0)

int expect_direct(void);
unsigned char pattern(int pe, uint32_t tag, size_t i);
void fill(void *p, int pe, uint32_t tag, size_t from, size_t to);
long mismatch_at(const void *p, int pe, uint32_t tag, size_t base, size_t n);

#define CHECK_PATTERN(p, pe, tag, base, n)                                               \
    do {                                                                                 \
        long at_ = mismatch_at((p), (pe), (tag), (base), (n));                           \
        if (at_ >= 0) fail(__LINE__, "byte %ld of %s (%zu bytes) is not PE %d's tag %u data", at_, #p, \
                           (size_t)(n), (int)(pe), (unsigned)(tag));                     \
    } while (0)

uint64_t offset_of(const void *p);
void allgather(uint64_t v, uint64_t *out);
int same_everywhere(uint64_t v);

#define CHECK_SYMMETRIC(p)                                                               \
    do {                                                                                 \
        if (!same_everywhere(offset_of(p))) fail(__LINE__, "%s's offset %llu is not the same on every PE", #p, \
                                                 (unsigned long long)offset_of(p));      \
    } while (0)

size_t used_blocks(void);
int right_pe(void);
int left_pe(void);

void scenario_symmetric(void);
void scenario_putget(void);
void scenario_direct(void);
void scenario_realloc(void);
void scenario_mismatch(void);
void scenario_barrier(void);
void scenario_stress(void);
void scenario_grow(void);
void scenario_bad_grow(void);
void scenario_largest(void);
void scenario_threads(void);
void scenario_reports(void);
void scenario_counts(void);
void scenario_deferred(void);
void scenario_deferred_wide(void);
void scenario_pingpong(void);
void scenario_overwrite(void);
void scenario_teams(void);
void scenario_teams_concurrent(void);
void scenario_team_skip(void);
void scenario_team_heaps(void);
void scenario_spaces(void);
void scenario_space_outsider(void);
void scenario_teams_crossed(void);
void scenario_spaces_crossed(void);
void scenario_team_messages(void);
void scenario_teams_across_nodes(void);
void deferred_after_finalize(void);

#endif /* SHMALLOC_PMIX_OFI_WORKER_H */
