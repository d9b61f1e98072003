/* signals.c - Open MPI's mpirun ends every PE with SIGTERM when one dies,
   and PMIx events do not reach its clients: the PE says what it was
   doing (in words the caller of shm__install_signals supplies), and
   removes the files of start-up, its own and those a killed peer left.
   Only async-signal-safe calls. */
#include "pmix_ofi.h"

#include <string.h>
#include <unistd.h>

static struct {
    shm__signal_words_fn words;
    struct sigaction old_term, old_int;
    int installed;
} shm__signals;

static void shm__on_signal(int sig)
{
    char line[256];
    size_t n = 0;
    shm__append(line, &n, sizeof line, "shmalloc: ");
    if (shm__signals.words && shm__signals.words(sig, line, &n, sizeof line)) {
        shm__append(line, &n, sizeof line, " (a launcher ends every PE when one fails)\n");
        if (write(2, line, n) < 0) { /* nothing more to do */ }
        shm__remove_files();
    } /* else before start-up or after shmem_finalize: only pass it on */
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Only where the program left the default action.  Installed before the
   endpoint exists, because the shm provider puts its own handler on top
   (it removes its files, then calls the one it found: ours).  words
   describes the PE, or returns 0 when it is not running. */
void shm__install_signals(shm__signal_words_fn words)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = shm__on_signal;
    sigemptyset(&sa.sa_mask);
    shm__signals.words = words;
    if (sigaction(SIGTERM, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
        sigaction(SIGTERM, &sa, &shm__signals.old_term);
        shm__signals.installed |= 1;
    }
    if (sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
        sigaction(SIGINT, &sa, &shm__signals.old_int);
        shm__signals.installed |= 2;
    }
}

void shm__restore_signals(void)
{
    if (shm__signals.installed & 1) sigaction(SIGTERM, &shm__signals.old_term, NULL);
    if (shm__signals.installed & 2) sigaction(SIGINT, &shm__signals.old_int, NULL);
    shm__signals.installed = 0;
}
