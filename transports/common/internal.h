/* internal.h - the build facts every transport file shares: hidden
   symbols and ThreadSanitizer.  MIT licence: see the end of
   ../../shmalloc.h.  Internal to the transports, not installed. */
#ifndef SHM__INTERNAL_H_INCLUDED
#define SHM__INTERNAL_H_INCLUDED

/* Marks what one transport's files share: hidden from the programs that
   link it. */
#if defined(__GNUC__) || defined(__clang__)
#  define SHM__INTERNAL __attribute__((visibility("hidden")))
#else
#  define SHM__INTERNAL
#endif

/* Defined when built with ThreadSanitizer, which the transports' waits
   and maps must suit: it does not model fences (gcc rejects them under
   -Werror) and owns fixed parts of the address space. */
#if defined(__SANITIZE_THREAD__)
#  define SHM__TSAN 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define SHM__TSAN 1
#  endif
#endif

#endif /* SHM__INTERNAL_H_INCLUDED */
