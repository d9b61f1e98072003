/* test_pmix_ofi_faults.c - the PMIx + libfabric transport's faults, PEs as
   processes: programs that end without shmem_finalize, a PE that dies,
   hangs, stops or fails at any step of start-up, and the /dev/shm files
   a job leaves (none). */
#include "pmix_ofi_launch.h" /* first: it includes test_support.h */

/* ---- programs that end without shmem_finalize ------------------------------
   Returning from main, or exit(3) on PE 1, without shmem_finalize: the PEs
   finalize at exit, so mpirun sees a clean end and the exit status. */
static void check_ends_without_finalize(const char *scenario, int status)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TIMEOUT=10", NULL};
    int npes;
    for (npes = 2; npes <= 4; npes += 2) {
        launch(&r, npes, scenario, env);
        cr_assert_eq(r.status, status, "%s on %d PEs: status %d:\n%s", scenario, npes, r.status, tail(&r));
        cr_assert(!has(&r, "improperly") && !has(&r, "FAIL"), "%s on %d PEs:\n%s", scenario, npes, tail(&r));
        cr_assert_eq(r.leftovers, 0, "%s left %d /dev/shm files", scenario, r.leftovers);
    }
}

Test(pmix_ofi, a_program_returning_from_main_without_finalize_exits_0, .timeout = TEST_TIMEOUT)
{
    check_ends_without_finalize("no_finalize", 0);
}

Test(pmix_ofi, a_program_calling_exit_3_without_finalize_exits_3, .timeout = TEST_TIMEOUT)
{
    check_ends_without_finalize("exit_3", 3);
}

/* ---- a PE that dies or hangs: the others end, bounded, and say so -------- */
static void check_death_on(const char *scenario, const char *provider, int npes, int node_size)
{
    static run r;
    char prov[64], size[64];
    const char *env[] = {prov, "SHMALLOC_TIMEOUT=5", "SHMALLOC_VERBOSE=1", size, NULL};
    snprintf(prov, sizeof prov, "FI_PROVIDER=%s", provider);
    snprintf(size, sizeof size, "SHMALLOC_TEST_NODE_SIZE=%d", node_size);
    if (node_size <= 0) env[3] = NULL;
    launch(&r, npes, scenario, env);
    cr_assert_neq(r.status, 0, "the job survived PE 1's death:\n%s", tail(&r));
    cr_assert(r.seconds < DEATH_LIMIT, "the job took %.1f s to end", r.seconds);
    cr_assert(!has(&r, "FAIL"), "a barrier returned without PE 1:\n%s", tail(&r));
    /* Our PEs name PE 1 when they wait for it; mpirun names rank 1. */
    cr_assert(has(&r, "for PE 1") || has(&r, "PE 1 ended") || has(&r, "rank 1 ") || has(&r, ",1]"),
              "nobody named the dead PE:\n%s", tail(&r));
    cr_assert(has(&r, "shmalloc: "), "no PE said why it ended:\n%s", tail(&r));
    if (strcmp(provider, "shm") == 0) { /* no leftovers: the dead PE's file went at start-up */
        cr_assert_eq(count(&r, "endpoint fi_shm://"), npes, "not every endpoint is named:\n%s", tail(&r));
        cr_assert_eq(r.leftovers, 0, "the job left %d /dev/shm files:\n%s", r.leftovers, tail(&r));
    }
}

static void check_death(const char *scenario, const char *provider) { check_death_on(scenario, provider, 4, 0); }

Test(pmix_ofi, sigkilled_pe_ends_the_job_shm, .timeout = TEST_TIMEOUT) { check_death("kill", "shm"); }
Test(pmix_ofi, sigkilled_pe_ends_the_job_tcp_rxm, .timeout = TEST_TIMEOUT) { check_death("kill", "tcp;ofi_rxm"); }
Test(pmix_ofi, pe_exiting_without_finalize_ends_the_job_shm, .timeout = TEST_TIMEOUT) { check_death("exit", "shm"); }
Test(pmix_ofi, pe_exiting_without_finalize_ends_the_job_tcp_rxm, .timeout = TEST_TIMEOUT)
{
    check_death("exit", "tcp;ofi_rxm");
}

Test(pmix_ofi, pe_killed_inside_a_collective_allocation_ends_the_job_shm, .timeout = TEST_TIMEOUT)
{
    check_death("kill_in_malloc", "shm");
}

/* A killed PE, oversubscribed. */
Test(pmix_ofi, sigkilled_pe_ends_the_job_of_32pe, .timeout = TEST_TIMEOUT) { check_death_on("kill", "shm", 32, 0); }
Test(pmix_ofi, pe_killed_inside_an_allocation_ends_the_job_of_4_nodes_of_4, .timeout = TEST_TIMEOUT)
{
    check_death_on("kill_in_malloc", "shm", 16, 4);
}

/* 1 when the list in line ("... PE 1 has ended", "... PEs 0, 1 have
   ended") holds pe. */
static int names_pe(const char *line, int pe)
{
    const char *p = strstr(line, ": PE");
    char *end;
    if (!p) return 0;
    for (p += strcspn(p, "0123456789"); *p >= '0' && *p <= '9'; p = end + strspn(end, ", ")) {
        long q = strtol(p, &end, 10);
        if (q == pe) return 1;
    }
    return 0;
}

/* Lines of r's output that start with tag; *naming: those naming pe. */
static int lines_naming(const run *r, const char *tag, int pe, int *naming)
{
    const char *p = r->out;
    int lines = 0;
    *naming = 0;
    while ((p = strstr(p, tag)) != NULL) {
        char line[256];
        size_t n = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)n, p);
        *naming += names_pe(line, pe);
        lines++;
        p += n;
    }
    return lines;
}

/* ---- a PE killed at each step of start-up ---------------------------------
   SHMALLOC_TEST_KILL_AT=STEP:K makes PE K SIGKILL itself as it enters the
   start-up fence named STEP.  The files of start-up exist then: the
   endpoint files from "endpoint names" on, the node segment at "node
   segment" and "node segment mapped".  The launcher ends the job; its PEs
   remove their own files and the killed PE's, so none is left. */
static void check_killed_at(const char *step)
{
    static run r;
    char kill_at[64], noticed[64], gone[96];
    const char *env[] = {"FI_PROVIDER=shm", kill_at, "SHMALLOC_TIMEOUT=10", NULL};
    int pe, naming;
    for (pe = 0; pe < 3; pe++) {
        snprintf(kill_at, sizeof kill_at, "SHMALLOC_TEST_KILL_AT=%s:%d", step, pe);
        snprintf(noticed, sizeof noticed, "process rank %d with PID", pe);
        snprintf(gone, sizeof gone, "shmalloc: PE %d ended without shmem_finalize (its process ", pe);
        launch(&r, 3, "init", env);
        cr_assert_neq(r.status, 0, "the job survived PE %d's death at \"%s\":\n%s", pe, step, tail(&r));
        /* The fence's timeout names it, or a peer PMIx told first, or mpirun. */
        lines_naming(&r, "shmalloc: PMIx fence", pe, &naming);
        cr_assert((has(&r, noticed) && has(&r, "signal 9")) || naming || has(&r, gone),
                  "PE %d was not killed at \"%s\":\n%s", pe, step, tail(&r));
        cr_assert_eq(r.leftovers, 0, "PE %d killed at \"%s\" left %d /dev/shm files:\n%s", pe, step, r.leftovers,
                     tail(&r));
    }
}

Test(pmix_ofi, a_pe_killed_at_the_endpoint_names_leaves_no_dev_shm_file, .timeout = TEST_TIMEOUT)
{
    check_killed_at("endpoint names");
}

Test(pmix_ofi, a_pe_killed_at_the_node_segment_leaves_no_dev_shm_file, .timeout = TEST_TIMEOUT)
{
    check_killed_at("node segment");
}

Test(pmix_ofi, a_pe_killed_with_the_node_segment_mapped_leaves_no_dev_shm_file, .timeout = TEST_TIMEOUT)
{
    check_killed_at("node segment mapped");
}

Test(pmix_ofi, a_pe_killed_at_the_heap_keys_leaves_no_dev_shm_file, .timeout = TEST_TIMEOUT)
{
    check_killed_at("heap keys");
}

Test(pmix_ofi, a_pe_killed_with_its_endpoint_open_leaves_no_dev_shm_file, .timeout = TEST_TIMEOUT)
{
    check_killed_at("endpoint open"); /* before this PE knows its file's name */
}

/* A PE killed outright runs no handler and has no peer left to remove its
   files: a lone PE SIGKILLed at each step of start-up while its endpoint
   file exists.  Its sweeper removes them. */
Test(pmix_ofi, a_lone_pe_killed_outright_leaves_no_dev_shm_file, .timeout = TEST_TIMEOUT)
{
    static run r;
    static const char *const steps[] = {"endpoint open", "endpoint names", "heap keys"};
    char kill_at[64];
    const char *env[] = {"FI_PROVIDER=shm", kill_at, NULL};
    size_t i;
    for (i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        snprintf(kill_at, sizeof kill_at, "SHMALLOC_TEST_KILL_AT=%s:0", steps[i]);
        launch(&r, 1, "init", env);
        cr_assert(has(&r, "process rank 0 with PID") && has(&r, "signal 9"), "PE 0 was not killed at \"%s\":\n%s",
                  steps[i], tail(&r));
        cr_assert_eq(r.leftovers, 0, "PE 0 killed at \"%s\" left %d /dev/shm files:\n%s", steps[i], r.leftovers,
                     tail(&r));
    }
}

/* mpirun's SIGKILL, a second after its SIGTERM, ends a PE that has not
   run its handler (here: one that ignores SIGTERM, stalled before the
   fence that swaps the names), and the PE killed with its endpoint open
   had no other peer: neither takes the fatal path, so only their
   sweepers remove the files. */
Test(pmix_ofi, a_pe_killed_before_its_handler_runs_leaves_no_dev_shm_file, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TEST_KILL_AT=endpoint open:1",
                         "SHMALLOC_TEST_STALL_AT=endpoint names:0", "SHMALLOC_TIMEOUT=10", NULL};
    const char *deaf = "sh -c 'if [ \"$PMIX_RANK\" = 0 ]; then trap \"\" TERM; fi; exec \"$0\" \"$@\"'";
    launch_in(&r, 2, "init", env, NULL, deaf);
    cr_assert(has(&r, "process rank 1 with PID") && has(&r, "signal 9"), "PE 1 was not killed:\n%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "the job left %d /dev/shm files:\n%s", r.leftovers, tail(&r));
}

/* PE 1 fails start-up for want of file descriptors (ulimit -n: 8, its
   heap's memfd; 9, the endpoint), while PE 0 waits at a step of its own
   start-up (SHMALLOC_TEST_STALL_AT) until the launcher's SIGTERM ends it:
   with its endpoint open but its name not known yet, and at the fence
   that swaps the names.  Neither leaves a file. */
Test(pmix_ofi, a_start_up_failed_for_want_of_files_leaves_no_dev_shm_file, .timeout = TEST_TIMEOUT)
{
    static run r;
    static const char *const steps[] = {"endpoint open", "endpoint names"};
    char stall[64], inner[200];
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TIMEOUT=20", stall, NULL};
    int limit;
    size_t i;
    for (limit = 8; limit <= 9; limit++)
        for (i = 0; i < sizeof steps / sizeof steps[0]; i++) {
            snprintf(stall, sizeof stall, "SHMALLOC_TEST_STALL_AT=%s:0", steps[i]);
            launch_in(&r, 3, "init", env, NULL, fd_limit_on(inner, sizeof inner, 1, limit));
            cr_assert_neq(r.status, 0, "ulimit -n %d on PE 1 went unnoticed:\n%s", limit, tail(&r));
            cr_assert(has(&r, "Too many open files"), "PE 1 did not fail for want of files:\n%s", tail(&r));
            cr_assert(r.seconds < DEATH_LIMIT, "took %.1f s", r.seconds);
            cr_assert_eq(r.leftovers, 0, "ulimit -n %d on PE 1, PE 0 ended at \"%s\": %d /dev/shm files left:\n%s",
                         limit, steps[i], r.leftovers, tail(&r));
        }
}

/* ulimit -n 8 on one PE of four: its heap's memfd fails, and mpirun ends
   the others with SIGTERM, then SIGKILL so soon after that a PE the
   machine has not scheduled meanwhile never runs its handler and leaves
   its endpoint file.  That PE's sweeper removes it as it dies: nothing
   is left a second after the job. */
Test(pmix_ofi, one_pe_of_four_short_of_files_leaves_no_dev_shm_file, .timeout = 2 * TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TIMEOUT=20", "SHMALLOC_VERBOSE=1", NULL};
    char inner[200];
    int round, pe;
    for (round = 0; round < 2; round++)
        for (pe = 0; pe < 4; pe++) {
            launch_in(&r, 4, "init", env, NULL, fd_limit_on(inner, sizeof inner, pe, 8));
            cr_assert_neq(r.status, 0, "ulimit -n 8 on PE %d went unnoticed:\n%s", pe, tail(&r));
            cr_assert(has(&r, "[START_MAP_FD_LIMIT] ") && has(&r, "Too many open files"), "%s", tail(&r));
            cr_assert(r.seconds < DEATH_LIMIT, "took %.1f s", r.seconds);
            cr_assert_eq(r.leftovers, 0, "ulimit -n 8 on PE %d of 4: %d /dev/shm files left:\n%s", pe, r.leftovers,
                         tail(&r));
        }
}

/* PE 1 is killed with its endpoint open, and PE 0's start-up then fails
   for want of files (ulimit -n 9: its endpoint), the launcher ending
   nobody (orte_enable_recovery): PE 0's failed start-up removes PE 1's
   file as it ends. */
Test(pmix_ofi, a_start_up_that_fails_after_a_peer_was_killed_removes_its_files, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TEST_KILL_AT=endpoint open:1", "SHMALLOC_TEST_STALL_AT=endpoint:0",
                         "OMPI_MCA_orte_enable_recovery=1", "SHMALLOC_TIMEOUT=10", NULL};
    char inner[200];
    launch_in(&r, 2, "init", env, NULL, fd_limit_on(inner, sizeof inner, 0, 9));
    cr_assert(has(&r, "[PMIX_FABRIC_CALL_FAILED] shmalloc: fi_enable ") && has(&r, "Too many open files"),
              "PE 0 did not fail at its endpoint:\n%s", tail(&r));
    cr_assert(!has(&r, ": OK init"), "%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "the job left %d /dev/shm files:\n%s", r.leftovers, tail(&r));
}

/* A start-up fence that fails names the PE that is gone.  Under
   orte_enable_recovery mpirun lets the others go on, so their fence fails
   rather than their being ended (or completes without the dead PE, and
   the survivors' get of its keys times out, naming it too). */
Test(pmix_ofi, a_failed_start_up_fence_names_the_pe_that_is_gone, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TEST_KILL_AT=node segment mapped:1",
                         "OMPI_MCA_orte_enable_recovery=1", "SHMALLOC_TIMEOUT=5", NULL};
    int naming, lines;
    launch(&r, 3, "init", env);
    lines = lines_naming(&r, "shmalloc: PMIx", 1, &naming);
    cr_assert_eq(lines, 2, "not both survivors said their fence or get failed:\n%s", tail(&r));
    cr_assert_eq(naming, 2, "not both survivors named PE 1:\n%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "the job left %d /dev/shm files:\n%s", r.leftovers, tail(&r));
}

/* Under --enable-recovery mpirun sends no termination event and lets the
   survivors run on: they see the awaited peer's process gone themselves
   and end naming it, long before their 30 s barrier timeout. */
static void check_death_seen_on_the_node(const char *scenario, int any_address)
{
    static run r;
    char any[64];
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TIMEOUT=30", "OMPI_MCA_orte_enable_recovery=1", any,
                         NULL};
    int naming;
    snprintf(any, sizeof any, "SHMALLOC_PMIX_OFI_ANY_ADDRESS=%d", any_address);
    launch(&r, 3, scenario, env);
    cr_assert(r.seconds < 10, "the survivors took %.1f s (the barrier timeout is 30 s):\n%s", r.seconds, tail(&r));
    cr_assert(lines_naming(&r, "[PMIX_PEER_NO_FINALIZE] ", 1, &naming) == 2 && naming == 2,
              "not both survivors named PE 1:\n%s", tail(&r));
    cr_assert(!has(&r, ": FAIL"), "%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "the job left %d /dev/shm files", r.leftovers);
}

Test(pmix_ofi, without_the_launchers_event_a_killed_pe_is_seen_gone_by_node_memory_barriers, .timeout = TEST_TIMEOUT)
{
    check_death_seen_on_the_node("kill", 0);
}

Test(pmix_ofi, without_the_launchers_event_a_pe_that_exits_is_seen_gone_by_message_barriers, .timeout = TEST_TIMEOUT)
{
    check_death_seen_on_the_node("exit", 1);
}

/* PE 0 skips a shmem_malloc, then finalizes and ends while PE 1 waits:
   PE 1 says PE 0 finalized, with each PE's count of rounds.
   Without node memory nothing says whether PE 0 finalized, and PE 1 does
   not claim it did not. */
Test(pmix_ofi, a_pe_that_finalized_early_is_not_said_to_have_skipped_finalize, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TIMEOUT=10", "SHMALLOC_PMIX_OFI_NODE_BARRIER=1", NULL};
    launch(&r, 2, "skip_malloc", env);
    cr_assert_neq(r.status, 0, "%s", tail(&r));
    cr_assert(has(&r, "[PMIX_PEER_FINALIZED] shmalloc: PE 0 ") && has(&r, "while PE 1 waits in its round "),
              "%s", tail(&r));
    cr_assert(!has(&r, "[PMIX_PEER_NO_FINALIZE] "), "%s", tail(&r));
    env[2] = "SHMALLOC_PMIX_OFI_NODE_BARRIER=0";
    launch(&r, 2, "skip_malloc", env);
    cr_assert_neq(r.status, 0, "%s", tail(&r));
    cr_assert(has(&r, "[PMIX_PEER_ENDED] shmalloc: PE 0 ") && has(&r, "(its process ") &&
              has(&r, "while PE 1 waits in its round "), "%s", tail(&r));
    cr_assert(!has(&r, "[PMIX_PEER_NO_FINALIZE] "), "%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "the job left %d /dev/shm files", r.leftovers);
}

/* PE 1 returns from main (status 0), or calls exit(1), without
   shmem_finalize while PE 0 makes a shmem_malloc: PE 1 says it ended
   without shmem_finalize, with its status, and PE 0 says the same of it,
   not that it called shmem_finalize. */
static void check_ended_early(const char *scenario, int status)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TIMEOUT=10", "SHMALLOC_PMIX_OFI_NODE_BARRIER=1", NULL};
    char said[160];
    launch(&r, 2, scenario, env);
    cr_assert_neq(r.status, 0, "%s", tail(&r));
    snprintf(said, sizeof said, "PE 1 ended without shmem_finalize (it returned from main or called exit, status %d) "
             "after ", status);
    cr_assert(has(&r, "[HEAP_MISMATCH_ENDED] shmalloc: ") && count(&r, said) == 2, "%s:\n%s", said, tail(&r));
    cr_assert(has(&r, "[PMIX_PEER_EXITED] shmalloc: PE 1 ended") && has(&r, "while PE 0 waits in its round "),
              "%s", tail(&r));
    cr_assert(!has(&r, "called shmem_finalize") && !has(&r, "[HEAP_MISMATCH_FINALIZE"), "%s", tail(&r));
    cr_assert(!has(&r, "FAIL"), "%s", tail(&r));
    cr_assert_eq(r.leftovers, 0, "the job left %d /dev/shm files", r.leftovers);
}

Test(pmix_ofi, a_pe_returning_from_main_without_finalize_is_said_to_have_ended_so, .timeout = TEST_TIMEOUT)
{
    check_ended_early("return_early", 0);
}

Test(pmix_ofi, a_pe_calling_exit_1_without_finalize_is_said_to_have_ended_so_with_status_1, .timeout = TEST_TIMEOUT)
{
    check_ended_early("exit_early", 1);
}

/* The line of r's output that holds needle, into line; 0 when none. */
static int line_with(const run *r, const char *needle, char *line, size_t cap)
{
    const char *p = strstr(r->out, needle), *start;
    if (!p) return 0;
    for (start = p; start > r->out && start[-1] != '\n'; start--) continue;
    snprintf(line, cap, "%.*s", (int)strcspn(start, "\n"), start);
    return 1;
}

/* PE 2 of 4 stops (SIGSTOP) before a barrier, and is continued 8 s later:
   every other PE's barrier times out or is ended by the launcher, and
   each names PE 2 ("which has not arrived", or "which PE k gave up
   waiting for" once PE k did), not the PE it waited for in its round
   (which was itself waiting).  Under orte_enable_recovery mpirun ends
   nobody, and PE 2, continued, says that a PE gave up waiting for it.
   By messages (node barrier off) a PE cannot see who has arrived, but
   sees a stopped peer on its node. */
Test(pmix_ofi, a_stopped_pe_is_the_one_every_other_pe_names, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TIMEOUT=3", "OMPI_MCA_orte_enable_recovery=0", NULL};
    char line[512], timed_out[64], signalled[64], stops[64];
    int recovery, pe;
    for (recovery = 0; recovery <= 1; recovery++) {
        env[2] = recovery ? "OMPI_MCA_orte_enable_recovery=1" : "OMPI_MCA_orte_enable_recovery=0";
        launch(&r, 4, "stop", env);
        for (pe = 0; pe < 4; pe++) {
            if (pe == 2) continue;
            snprintf(timed_out, sizeof timed_out, "(PE %d of 4, barrier", pe);
            snprintf(signalled, sizeof signalled, "shmalloc: PE %d of 4 ended by signal", pe);
            snprintf(stops, sizeof stops, "; PE %d of 4 stops", pe); /* a peer that gave up went first */
            cr_assert(line_with(&r, timed_out, line, sizeof line) || line_with(&r, signalled, line, sizeof line) ||
                      line_with(&r, stops, line, sizeof line), "PE %d said nothing:\n%s", pe, tail(&r));
            cr_assert(strstr(line, "PE 2, which has not arrived") || strstr(line, "PE 2, which PE "),
                      "PE %d names another PE: %s\n%s", pe, line, tail(&r));
        }
        cr_assert(!has(&r, "without shmem_finalize") && !has(&r, "FAIL"), "%s", tail(&r));
        if (recovery)
            cr_assert(has(&r, "gave up waiting for this PE (its barrier timed out after 3 s; ") &&
                      has(&r, "PE 2 was stopped or busy outside shmem for longer than SHMALLOC_TIMEOUT; "
                          "PE 2 of 4 stops"), "%s", tail(&r));
        cr_assert_eq(r.leftovers, 0, "the job left %d /dev/shm files", r.leftovers);
    }
}

Test(pmix_ofi, a_stopped_pe_is_named_by_message_barriers_too, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TIMEOUT=3", "OMPI_MCA_orte_enable_recovery=1",
                         "SHMALLOC_PMIX_OFI_NODE_BARRIER=0", NULL};
    char line[512], timed_out[64];
    int pe;
    launch(&r, 4, "stop", env);
    for (pe = 0; pe < 4; pe++) {
        if (pe == 2) continue;
        snprintf(timed_out, sizeof timed_out, "(PE %d of 4, barrier", pe);
        cr_assert(line_with(&r, timed_out, line, sizeof line), "PE %d said nothing:\n%s", pe, tail(&r));
        cr_assert(strstr(line, "barrier timed out after 3 s waiting for PE 2, which is stopped"),
                  "PE %d names another PE: %s\n%s", pe, line, tail(&r));
    }
    cr_assert(!has(&r, "without shmem_finalize") && !has(&r, "FAIL"), "%s", tail(&r));
}

/* One PE's heap registration fails: shmalloc_heap_create's all-reduce
   makes every PE fail start-up, none waits forever. */
Test(pmix_ofi, failed_registration_on_one_pe_fails_start_up_everywhere, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TEST_FAIL_REGISTER=2", "SHMALLOC_TIMEOUT=10",
                         "SHMALLOC_VERBOSE=1", NULL};
    launch(&r, 4, "init", env);
    cr_assert_neq(r.status, 0, "%s", tail(&r));
    cr_assert(has(&r, "[PMIX_TEST_REGISTER_FAILED] ") && has(&r, " on PE 2 "), "%s", tail(&r));
    cr_assert(has(&r, "[START_HEAP_CREATE_FAILED] "), "no PE reported the failed creation:\n%s", tail(&r));
    cr_assert(!has(&r, ": OK init"), "%s", tail(&r));
    cr_assert(r.seconds < DEATH_LIMIT, "took %.1f s", r.seconds);
}

Test(pmix_ofi, hung_pe_makes_the_barrier_time_out_naming_it, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_TIMEOUT=2", "SHMALLOC_VERBOSE=1", NULL};
    launch(&r, 2, "hang", env);
    cr_assert_neq(r.status, 0, "%s", tail(&r));
    cr_assert(has(&r, "[PMIX_BARRIER_TIMEOUT") && has(&r, " after 2 s waiting for PE 1"), "%s", tail(&r)); /* any of three */
    cr_assert(r.seconds < DEATH_LIMIT, "took %.1f s", r.seconds);
}

Test(pmix_ofi, global_exit_ends_every_pe_with_its_status, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_VERBOSE=1", NULL};
    launch(&r, 4, "global_exit", env);
    cr_assert_eq(r.status, 7, "status %d:\n%s", r.status, tail(&r));
    cr_assert(r.seconds < DEATH_LIMIT, "took %.1f s", r.seconds);
    cr_assert(!has(&r, "FAIL"), "%s", tail(&r));
}

/* ---- no leftovers in /dev/shm ------------------------------------------- */
static void make_file(const char *path, int uid)
{
    FILE *f = fopen(path, "w");
    cr_assert(f != NULL, "cannot create %s", path);
    fclose(f);
    if (uid >= 0) cr_assert(chown(path, (uid_t)uid, (gid_t)uid) == 0, "chown %s", path);
}

/* Files named like the shm provider's, of a process that has ended: start-up
   removes this user's, and keeps another user's and a live process's. */
Test(pmix_ofi, start_up_removes_this_users_files_of_ended_processes_only, .timeout = TEST_TIMEOUT)
{
    static run r;
    const char *env[] = {"FI_PROVIDER=shm", "SHMALLOC_VERBOSE=1", NULL};
    char dead_mine[64], dead_other[64], live_mine[64];
    int root = getuid() == 0, status;
    pid_t child = fork();
    cr_assert(child >= 0);
    if (child == 0) _exit(0);
    cr_assert(waitpid(child, &status, 0) == child); /* child's pid is now nobody's */
    snprintf(dead_mine, sizeof dead_mine, "/dev/shm/%ld:0:0", (long)child);
    snprintf(dead_other, sizeof dead_other, "/dev/shm/%ld:1:0", (long)child);
    snprintf(live_mine, sizeof live_mine, "/dev/shm/%ld:0:0", (long)getpid());
    make_file(dead_mine, -1);
    if (root) make_file(dead_other, 65534);
    make_file(live_mine, -1);
    launch(&r, 2, "init", env);
    cr_assert_eq(r.status, 0, "%s", tail(&r));
    cr_assert(access(dead_mine, F_OK) != 0, "%s survived start-up", dead_mine);
    cr_assert(access(live_mine, F_OK) == 0, "%s (a live process's) was removed", live_mine);
    if (root) cr_assert(access(dead_other, F_OK) == 0, "%s (another user's) was removed", dead_other);
    cr_assert(has(&r, "[PMIX_NOTE_FILES_REMOVED] "), "%s", tail(&r));
    unlink(live_mine);
    unlink(dead_other);
    cr_assert_eq(r.leftovers, 0, "a clean run left %d /dev/shm files", r.leftovers);
    if (!root) cr_skip_test("the other user's file needs root to create; the rest passed");
}
