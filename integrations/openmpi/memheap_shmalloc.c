/* memheap_shmalloc.c - an Open MPI oshmem memheap component ("shmalloc")
   that serves the symmetric heap with the TLSF core of shmalloc.h.
   MIT licence, see shmalloc.h.  Built out of tree as a DSO against the
   installed Open MPI (see README.md beside this file).

   oshmem keeps its entry points, its barriers and its address checks: its
   shmem_malloc, shmem_free, ... call the module's members below through
   the mca_memheap function table.  Two TLSF heaps: the user heap over the
   context's user region, and a pool over its private region for oshmem's
   own symmetric objects (sync arrays, locks), so internal allocations never
   move a user block's offset.  The core places blocks by offset from its
   region's base alone, so the same calls on every PE give the same
   offsets, whether or not the heaps share one address. */

#include "oshmem_config.h"
#include "oshmem/constants.h"
#include "oshmem/mca/memheap/memheap.h"
#include "oshmem/mca/memheap/base/base.h"
#include "opal/threads/thread_usage.h"

#include <pthread.h>

#define SHMALLOC_STATIC         /* the allocator is private to this DSO */
#define SHMALLOC_NO_SHMEM_NAMES /* liboshmem has its own shmem_malloc, ... */
#define SHMALLOC_IMPLEMENTATION
#include "shmalloc.h"

/* Below ptmalloc's 100: installing the component never replaces the stock
   heap; OMPI_MCA_memheap=shmalloc selects it. */
#define SHM__OM_PRIORITY 20

OSHMEM_MODULE_DECLSPEC extern mca_memheap_base_component_t mca_memheap_shmalloc_component;

static struct {
    shmalloc_tlsf *user, *private_pool;
    pthread_mutex_t lock; /* oshmem serialises frees, not every call */
} shm__om = {NULL, NULL, PTHREAD_MUTEX_INITIALIZER};

/* Taken only when the program runs threads, as Open MPI's own locks are. */
static void shm__om_lock(void)
{
    if (opal_using_threads()) pthread_mutex_lock(&shm__om.lock);
}
static void shm__om_unlock(void)
{
    if (opal_using_threads()) pthread_mutex_unlock(&shm__om.lock);
}

static int shm__om_refuse(const char *call, const void *ptr, int status)
{
    MEMHEAP_WARN("shmalloc: %s(%p) ignored, symmetric heap unchanged: %s", call, ptr,
                 shmalloc_tlsf_strerror(status));
    return OSHMEM_ERR_BAD_PARAM;
}

/* The TLSF core's result as oshmem's: a block or an out-of-resource error. */
static int shm__om_result(void *block, void **out)
{
    *out = block;
    return block ? OSHMEM_SUCCESS : OSHMEM_ERR_OUT_OF_RESOURCE;
}

static int shm__om_alloc_in(shmalloc_tlsf *t, size_t size, void **out)
{
    void *p;
    if (size == 0) { /* NULL and no error, as the man pages say */
        *out = NULL;
        return OSHMEM_SUCCESS;
    }
    shm__om_lock();
    p = shmalloc_tlsf_malloc(t, size);
    shm__om_unlock();
    return shm__om_result(p, out);
}

static int shm__om_free_in(shmalloc_tlsf *t, void *ptr)
{
    int status;
    if (ptr == NULL) return OSHMEM_SUCCESS;
    shm__om_lock();
    status = shmalloc_tlsf_free(t, ptr);
    shm__om_unlock();
    return status == SHMALLOC_TLSF_OK ? OSHMEM_SUCCESS : shm__om_refuse("free", ptr, status);
}

static int shm__om_alloc(size_t size, void **out) { return shm__om_alloc_in(shm__om.user, size, out); }
static int shm__om_free(void *ptr) { return shm__om_free_in(shm__om.user, ptr); }
static int shm__om_private_alloc(size_t size, void **out) { return shm__om_alloc_in(shm__om.private_pool, size, out); }
static int shm__om_private_free(void *ptr) { return shm__om_free_in(shm__om.private_pool, ptr); }

/* OpenSHMEM asks for a power of two; 0 and others are refused, not rounded. */
static int shm__om_memalign(size_t align, size_t size, void **out)
{
    void *p;
    *out = NULL;
    if (align == 0 || (align & (align - 1)) != 0) {
        MEMHEAP_WARN("shmalloc: alignment %zu is not a power of two", align);
        return OSHMEM_ERR_BAD_PARAM;
    }
    if (size == 0) return OSHMEM_SUCCESS;
    shm__om_lock();
    p = shmalloc_tlsf_align(shm__om.user, align, size);
    shm__om_unlock();
    return shm__om_result(p, out);
}

/* realloc(NULL, n) allocates, realloc(p, 0) frees; a pointer that is not a
   live block is refused; when no room is found p stays as it was. */
static int shm__om_realloc(size_t size, void *ptr, void **out)
{
    int status;
    void *p;
    *out = NULL;
    if (ptr == NULL) return shm__om_alloc(size, out);
    if (size == 0) return shm__om_free(ptr);
    shm__om_lock();
    status = shmalloc_tlsf_validate(shm__om.user, ptr);
    p = status == SHMALLOC_TLSF_OK ? shmalloc_tlsf_realloc(shm__om.user, ptr, size) : NULL;
    shm__om_unlock();
    if (status != SHMALLOC_TLSF_OK) return shm__om_refuse("realloc", ptr, status);
    return shm__om_result(p, out);
}

/* The framework unmaps the heap before it closes the component: forget
   the heaps, touch nothing. */
static int shm__om_finalize(void)
{
    shm__om.user = shm__om.private_pool = NULL;
    return OSHMEM_SUCCESS;
}

static shmalloc_tlsf *shm__om_create(const char *what, void *base, size_t size)
{
    shmalloc_tlsf *t = shmalloc_tlsf_create(base, size);
    shmalloc_counters c;
    if (t == NULL) {
        MEMHEAP_ERROR("shmalloc: cannot lay out the %s over %zu bytes at %p", what, size, base);
        return NULL;
    }
    shmalloc_tlsf_counters(t, &c);
    MEMHEAP_VERBOSE(1, "shmalloc: TLSF %s of %zu bytes at %p, largest free block %zu bytes", what, size, base,
                    c.largest_free);
    return t;
}

static int shm__om_init(memheap_context_t *context)
{
    if (context == NULL || context->user_size == 0 || context->private_size == 0) return OSHMEM_ERR_BAD_PARAM;
    shm__om.user = shm__om_create("user heap", context->user_base_addr, context->user_size);
    shm__om.private_pool = shm__om_create("private pool", context->private_base_addr, context->private_size);
    return shm__om.user && shm__om.private_pool ? OSHMEM_SUCCESS : OSHMEM_ERROR;
}

/* The key lookups are the framework's own, exported by liboshmem. */
static mca_memheap_base_module_t shm__om_module = {
    .memheap_component = &mca_memheap_shmalloc_component,
    .memheap_finalize = shm__om_finalize,
    .memheap_alloc = shm__om_alloc,
    .memheap_memalign = shm__om_memalign,
    .memheap_realloc = shm__om_realloc,
    .memheap_free = shm__om_free,
    .memheap_private_alloc = shm__om_private_alloc,
    .memheap_private_free = shm__om_private_free,
    .memheap_get_local_mkey = mca_memheap_base_get_mkey,
    .memheap_is_symmetric_addr = mca_memheap_base_is_symmetric_addr,
    .memheap_get_all_mkeys = mca_memheap_modex_recv_all,
    .memheap_size = 0, /* set by the framework after memheap_init */
};

static int shm__om_query(mca_base_module_t **module, int *priority)
{
    *priority = SHM__OM_PRIORITY;
    *module = (mca_base_module_t *)&shm__om_module;
    return OSHMEM_SUCCESS;
}

static int shm__om_open(void) { return OSHMEM_SUCCESS; }
static int shm__om_close(void) { return shm__om_finalize(); }

mca_memheap_base_component_t mca_memheap_shmalloc_component = {
    .memheap_version =
        {
            MCA_MEMHEAP_BASE_VERSION_2_0_0,
            .mca_component_name = "shmalloc",
            MCA_BASE_MAKE_VERSION(component, OSHMEM_MAJOR_VERSION, OSHMEM_MINOR_VERSION, OSHMEM_RELEASE_VERSION),
            .mca_open_component = shm__om_open,
            .mca_close_component = shm__om_close,
            .mca_query_component = shm__om_query,
        },
    .memheap_data = {.param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT},
    .memheap_init = shm__om_init,
};
