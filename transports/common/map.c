/* map.c - the transports' memory primitive: see map.h. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE, memfd_create */
#endif
#include "map.h"
#define SHMALLOC_MESSAGE_FORMATS /* SHM__MSG: each message checked against its text */
#include "../../shmalloc.h"
#include "messages.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#if !defined(MAP_HUGETLB)
#  define MAP_HUGETLB 0x40000
#endif
#if !defined(MAP_HUGE_SHIFT)
#  define MAP_HUGE_SHIFT 26
#endif
#if !defined(MFD_CLOEXEC)
#  define MFD_CLOEXEC 1u
#endif
#if !defined(MFD_HUGETLB)
#  define MFD_HUGETLB 4u
#endif
#if !defined(MAP_FIXED_NOREPLACE)
#  define MAP_FIXED_NOREPLACE 0x100000 /* Linux 4.17; older kernels take a hint */
#endif
#if !defined(MADV_HUGEPAGE)
#  define MADV_HUGEPAGE 14
#endif

/* >> huge page settings ----------------------------------------------------- */
static size_t shm__base_page(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* 1 when the kernel offers hugetlbfs pages of this size. */
static int shm__hugetlb_size_exists(size_t size)
{
    char path[96];
    struct stat st;
    snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/hugepages-%zukB", size >> 10);
    return stat(path, &st) == 0;
}

/* The kernel's default hugetlbfs page size, or 2 MiB when it says none. */
static size_t shm__hugetlb_default(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    unsigned long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Hugepagesize: %lu kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb ? (size_t)kb << 10 : SHMALLOC_MAP_THP_BYTES;
}

/* -1 when text names no huge page size this kernel has. */
static int shm__huge_size_ok(const char *text, size_t *size)
{
    return shmalloc_parse_size(text, size) == 0 && *size > shm__base_page() && (*size & (*size - 1)) == 0 &&
                   shm__hugetlb_size_exists(*size) ? 0 : -1;
}

static int shm__huge_bad(const char *var, const char *value, const char *expected)
{
    char quoted[96];
    shmalloc_print(2, SHM__MSG(OPTION_HUGE_PAGES_BAD), var, shmalloc_option_quote(quoted, sizeof quoted, value, "\""),
                   expected);
    return -1;
}

/* The mapping's rows of the options table, each kept by the id
   shmalloc_options_add gave it. */
enum { SHM__OPT_HUGE_PAGES, SHM__OPT_SOS_HUGE_PAGES, SHM__OPT_SOS_PAGE_SIZE, SHM__OPT_COUNT };
static int shm__opt_id[SHM__OPT_COUNT];

int shmalloc_map_options_add(void)
{
    static const shmalloc_option rows[SHM__OPT_COUNT] = {
        {"SHMALLOC_HUGE_PAGES", {NULL, NULL}, SHMALLOC_KIND_WORD, "off", "off, auto, 2M or 1G: the heap's pages",
         NULL, NULL, 0},
        {"SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES", {NULL, NULL}, SHMALLOC_KIND_YES_NO, "0",
         "SOS's switch for huge pages, read when SHMALLOC_HUGE_PAGES is unset", NULL, NULL, 0},
        {"SHMEM_SYMMETRIC_HEAP_PAGE_SIZE", {NULL, NULL}, SHMALLOC_KIND_WORD, "2M",
         "SOS's huge page size, with the switch above", NULL, NULL, 0},
    };
    int k;
    for (k = 0; k < SHM__OPT_COUNT; k++)
        if ((shm__opt_id[k] = shmalloc_options_add(&rows[k], 1)) < 0) return -1;
    return 0;
}

/* Row k's text when a variable set it, else NULL. */
static const char *shm__set_text(int k)
{
    const shmalloc_option *o = &shmalloc_options()[shm__opt_id[k]];
    return o->source ? o->text : NULL;
}

int shmalloc_map_huge_from_table(shmalloc_map_huge *h)
{
    const char *v, *use, *size;
    const char *sizes = "a huge page size this kernel offers (see /sys/kernel/mm/hugepages), e.g. 2M or 1G";
    if (shmalloc_map_options_add() < 0) return -1;
    v = shm__set_text(SHM__OPT_HUGE_PAGES);
    use = shm__set_text(SHM__OPT_SOS_HUGE_PAGES);
    size = shm__set_text(SHM__OPT_SOS_PAGE_SIZE);
    memset(h, 0, sizeof *h);
    h->size = shm__hugetlb_default();
    if (v && *v) {
        snprintf(h->setting, sizeof h->setting, "SHMALLOC_HUGE_PAGES=%.80s", v);
        if (!strcmp(v, "off")) return 0;
        h->mode = strcmp(v, "auto") ? SHMALLOC_MAP_HUGE_SIZE : SHMALLOC_MAP_HUGE_AUTO;
        if (h->mode == SHMALLOC_MAP_HUGE_SIZE && shm__huge_size_ok(v, &h->size) != 0)
            return shm__huge_bad("SHMALLOC_HUGE_PAGES", v, "auto, off or a huge page size this kernel offers "
                                 "(see /sys/kernel/mm/hugepages), e.g. 2M or 1G");
        return 0;
    }
    if (size && *size && shm__huge_size_ok(size, &h->size) != 0)
        return shm__huge_bad("SHMEM_SYMMETRIC_HEAP_PAGE_SIZE", size, sizes);
    if (!use || !*use || !shmalloc_options()[shm__opt_id[SHM__OPT_SOS_HUGE_PAGES]].value) return 0;
    h->mode = SHMALLOC_MAP_HUGE_SIZE;
    if (!size || !*size) h->size = SHMALLOC_MAP_THP_BYTES;
    snprintf(h->setting, sizeof h->setting, "SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES=%.16s%s%.24s", use,
             size && *size ? " SHMEM_SYMMETRIC_HEAP_PAGE_SIZE=" : "", size && *size ? size : "");
    return 0;
}

/* >> placement ---------------------------------------------------------------- */
size_t shmalloc_map_pow2_cover(size_t bytes, size_t floor, size_t cap)
{
    size_t a = floor;
    while (a < bytes && a < cap) a <<= 1;
    return a;
}

/* mmap with the flags of this kind of memory (fd >= 0: shared). */
static void *shm__mmap(void *addr, size_t len, int hugetlb_flags, int fd, int extra)
{
    int flags = (fd >= 0 ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS | hugetlb_flags) | extra;
    if (!hugetlb_flags) flags |= MAP_NORESERVE; /* hugetlbfs: reserve now, or fail now rather than SIGBUS later */
    return mmap(addr, len, PROT_READ | PROT_WRITE, flags, fd, 0);
}

static void *shm__place_fixed(const shmalloc_map_place *pl, size_t len, size_t align, int hflags, int fd)
{
    uintptr_t addr = (pl->first + align - 1) & ~(uintptr_t)(align - 1);
    int i;
    for (i = 0; i < pl->tries; i++, addr += align) {
        void *p;
        if (addr > pl->end || len > pl->end - addr) break;
        p = shm__mmap((void *)addr, len, hflags, fd, MAP_FIXED_NOREPLACE);
        if (p == (void *)addr) return p;
        if (p != MAP_FAILED) munmap(p, len); /* an old kernel took it as a hint */
    }
    return NULL;
}

/* An aligned base: reserve len + align of address space, then map over the
   aligned part and give back the rest. */
static void *shm__place_aligned(size_t len, size_t align, void *hint, int hflags, int fd)
{
    char *raw;
    uintptr_t start;
    size_t head;
    void *p;
    if (len > SIZE_MAX - align) return NULL;
    raw = (char *)mmap(hint, len + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == (char *)MAP_FAILED) return NULL;
    start = ((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1);
    head = (size_t)(start - (uintptr_t)raw);
    p = shm__mmap((void *)start, len, hflags, fd, MAP_FIXED);
    if (p == MAP_FAILED) {
        int e = errno;
        munmap(raw, len + align);
        errno = e;
        return NULL;
    }
    if (head > 0) munmap(raw, head);
    if (align - head > 0) munmap((char *)start + len, align - head);
    return p;
}

static void *shm__place_map(const shmalloc_map_place *pl, size_t len, size_t unit, int hflags, int fd, int *fixed)
{
    void *p = NULL;
    *fixed = 0;
    if (pl && pl->first) {
        p = shm__place_fixed(pl, len, shmalloc_map_pow2_cover(len, unit, (size_t)1 << 62), hflags, fd);
        *fixed = p != NULL;
    }
    if (!p && pl && pl->hint) p = shm__place_aligned(len, shmalloc_map_pow2_cover(len, unit, SHMALLOC_MAP_MAX_ALIGN), pl->hint, hflags, fd);
    if (!p) p = shm__place_aligned(len, shmalloc_map_pow2_cover(len, unit, SHMALLOC_MAP_MAX_ALIGN), NULL, hflags, fd);
    return p;
}

/* >> what the kernel gave ------------------------------------------------------
   The smaps entry of the mapping holding addr: its page size, and the bytes
   of it that transparent huge pages back (anonymous or shared memory). */
static int shm__smaps(const void *addr, size_t *kernel_page, size_t *thp_bytes)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int inside = 0, found = 0;
    uintptr_t a = (uintptr_t)addr;
    *kernel_page = 0;
    *thp_bytes = 0;
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, kb;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) { /* a mapping's header; fields start with a name */
            if (found) break;
            inside = a >= lo && a < hi;
            found = inside;
        } else if (inside) {
            if (sscanf(line, "KernelPageSize: %lu kB", &kb) == 1) *kernel_page = (size_t)kb << 10;
            else if (sscanf(line, "AnonHugePages: %lu kB", &kb) == 1 || sscanf(line, "ShmemPmdMapped: %lu kB", &kb) == 1)
                *thp_bytes += (size_t)kb << 10;
        }
    }
    fclose(f);
    return found ? 0 : -1;
}

static void shm__why(shmalloc_map_mem *m, const char *fmt, ...) SHMALLOC_FORMAT(2, 3);
static void shm__why(shmalloc_map_mem *m, const char *fmt, ...)
{
    size_t n = strlen(m->why);
    va_list ap;
    if (n + 3 >= sizeof m->why) return;
    if (n) {
        memcpy(m->why + n, "; ", 3);
        n += 2;
    }
    va_start(ap, fmt);
    vsnprintf(m->why + n, sizeof m->why - n, fmt, ap);
    va_end(ap);
}

/* A one-line file's content, for reports. */
static const char *shm__file_line(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    buf[0] = '\0';
    if (f) {
        if (!fgets(buf, (int)cap, f)) buf[0] = '\0';
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = '\0';
    return buf[0] ? buf : "unreadable";
}

/* >> mapping a heap ------------------------------------------------------------ */
static int shm__memfd(size_t len, unsigned huge_flags)
{
    int fd = memfd_create("shmalloc-heap", MFD_CLOEXEC | huge_flags);
    if (fd >= 0 && ftruncate(fd, (off_t)len) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        fd = -1;
    }
    return fd;
}

/* hugetlbfs pages of h->size: reserved in full now, so a shortage fails
   here and not as a SIGBUS later. */
static int shm__try_hugetlb(shmalloc_map_mem *m, const shmalloc_map_place *pl, size_t len, const shmalloc_map_huge *h, int shared)
{
    unsigned shift = 0;
    int hflags, fd = -1;
    size_t kpage, thp;
    void *p;
    while (((size_t)1 << shift) < h->size) shift++;
    hflags = MAP_HUGETLB | (int)(shift << MAP_HUGE_SHIFT);
    if (shared && (fd = shm__memfd(len, MFD_HUGETLB | (shift << MAP_HUGE_SHIFT))) < 0) {
        shm__why(m, "no shared hugetlbfs memory of %zu KiB pages (%s)", h->size >> 10, strerror(errno));
        return -1;
    }
    p = shm__place_map(pl, len, h->size, hflags, fd, &m->fixed);
    if (!p) {
        char total[32], free_pages[32], path[96];
        snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/hugepages-%zukB/nr_hugepages", h->size >> 10);
        shm__file_line(path, total, sizeof total);
        snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/hugepages-%zukB/free_hugepages", h->size >> 10);
        shm__why(m, "%zu bytes of %zu KiB hugetlbfs pages could not be reserved (%s; %s of %s pages free: raise %s)",
                 len, h->size >> 10, strerror(errno), shm__file_line(path, free_pages, sizeof free_pages), total,
                 h->size == shm__hugetlb_default() ? "vm.nr_hugepages" : "nr_hugepages under /sys/kernel/mm/hugepages");
        if (fd >= 0) close(fd);
        return -1;
    }
    m->base = (char *)p;
    m->mapped = len;
    m->fd = fd;
    if (shm__smaps(p, &kpage, &thp) == 0 && kpage == h->size) {
        m->pages = SHMALLOC_MAP_PAGES_HUGETLB;
        m->page_size = kpage;
        return 0;
    }
    shm__why(m, "a hugetlbfs mapping shows %zu KiB pages in /proc/self/smaps", kpage >> 10);
    munmap(p, len);
    if (fd >= 0) close(fd);
    m->base = NULL;
    m->fd = -1;
    return -1;
}

/* Base pages, advised to become transparent huge pages when want_thp; the
   first huge page is touched so smaps can show whether the advice took. */
static int shm__try_base(shmalloc_map_mem *m, const shmalloc_map_place *pl, size_t len, size_t unit, int want_thp, int shared)
{
    int fd = shared ? shm__memfd(len, 0) : -1;
    size_t kpage, thp;
    void *p;
    if (shared && fd < 0) return -1;
    p = shm__place_map(pl, len, unit, 0, fd, &m->fixed);
    if (!p) {
        if (fd >= 0) close(fd);
        return -1;
    }
    m->base = (char *)p;
    m->mapped = len;
    m->fd = fd;
    m->pages = SHMALLOC_MAP_PAGES_BASE;
    m->page_size = shm__base_page();
    if (!want_thp) return 0;
    if (len < SHMALLOC_MAP_THP_BYTES || madvise(p, len, MADV_HUGEPAGE) != 0) {
        shm__why(m, "transparent huge pages: %s", len < SHMALLOC_MAP_THP_BYTES ? "the heap is smaller than one" : strerror(errno));
        return 0;
    }
    *(volatile char *)p = 0;
    if (shm__smaps(p, &kpage, &thp) == 0 && thp > 0) {
        m->pages = SHMALLOC_MAP_PAGES_THP;
        m->page_size = SHMALLOC_MAP_THP_BYTES;
    } else {
        char mode[96];
        const char *knob = shared ? "/sys/kernel/mm/transparent_hugepage/shmem_enabled"
                                  : "/sys/kernel/mm/transparent_hugepage/enabled";
        shm__why(m, "transparent huge pages did not apply to %s memory (%s: %s)", shared ? "shared" : "private", knob,
                 shm__file_line(knob, mode, sizeof mode));
    }
    return 0;
}

int shmalloc_map_heap(shmalloc_map_mem *m, size_t bytes, const shmalloc_map_huge *h, int shared, const shmalloc_map_place *pl)
{
    size_t page = shm__base_page(), unit = h->mode == SHMALLOC_MAP_HUGE_OFF ? page : h->size, len;
    memset(m, 0, sizeof *m);
    m->fd = -1;
    if (bytes == 0 || bytes > SIZE_MAX - unit) {
        errno = ENOMEM;
        return -1;
    }
    m->bytes = (bytes + page - 1) & ~(page - 1);
    len = (bytes + unit - 1) & ~(unit - 1); /* the same on every PE, whatever each obtains */
    if (h->mode != SHMALLOC_MAP_HUGE_OFF && shm__try_hugetlb(m, pl, len, h, shared) == 0) return 0;
    return shm__try_base(m, pl, len, unit, h->mode != SHMALLOC_MAP_HUGE_OFF, shared);
}

const char *shmalloc_map_pages_name(const shmalloc_map_mem *m)
{
    switch (m->pages) {
    case SHMALLOC_MAP_PAGES_HUGETLB: return m->page_size == (size_t)1 << 30 ? "1 GiB hugetlbfs pages" : "2 MiB hugetlbfs pages";
    case SHMALLOC_MAP_PAGES_THP: return "2 MiB transparent huge pages";
    default: return "4 KiB pages";
    }
}

void shmalloc_map_report(const shmalloc_map_mem *m, const shmalloc_map_huge *h, int pe)
{
    int short_of = h->mode == SHMALLOC_MAP_HUGE_SIZE ? m->pages != SHMALLOC_MAP_PAGES_HUGETLB : m->pages == SHMALLOC_MAP_PAGES_BASE;
    if (h->mode == SHMALLOC_MAP_HUGE_OFF || !short_of) return;
    shmalloc_print(2, SHM__START_MSG(HUGE_PAGES_FELL_BACK), h->setting,
                   h->mode == SHMALLOC_MAP_HUGE_AUTO ? "huge pages" : "hugetlbfs pages", pe, m->bytes, (void *)m->base,
                   shmalloc_map_pages_name(m), m->why[0] ? m->why : "no reason known");
}

void shmalloc_map_release(shmalloc_map_mem *m)
{
    if (!m->base) return; /* never mapped: fd may be 0 of a zeroed struct */
    munmap(m->base, m->mapped);
    if (m->fd >= 0) close(m->fd);
    m->base = NULL;
    m->fd = -1;
}

/* Which node this process is on, as far as sharing memory goes: the
   kernel's boot id, the host name and the pid namespace (a peer's /proc
   entry must be its own).  FNV-1a over the three. */
uint64_t shmalloc_map_node_id(void)
{
    char text[512], buf[256];
    size_t n = 0, i;
    ssize_t len;
    uint64_t h = 14695981039346656037ull;
    n += strlen(strcpy(text, shm__file_line("/proc/sys/kernel/random/boot_id", buf, sizeof buf)));
    text[n++] = '/';
    if (gethostname(text + n, 128) == 0) n += strnlen(text + n, 128);
    text[n++] = '/';
    len = readlink("/proc/self/ns/pid", text + n, sizeof text - n - 1);
    if (len > 0) n += (size_t)len;
    for (i = 0; i < n; i++) h = (h ^ (unsigned char)text[i]) * 1099511628211ull;
    return h;
}

char *shmalloc_map_peer(long pid, int fd, size_t len)
{
    char path[64];
    void *p;
    int mine;
    snprintf(path, sizeof path, "/proc/%ld/fd/%d", pid, fd);
    mine = open(path, O_RDWR | O_CLOEXEC);
    if (mine < 0) return NULL;
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, mine, 0);
    close(mine);
    return p == MAP_FAILED ? NULL : (char *)p;
}
