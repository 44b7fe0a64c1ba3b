/* SPDX-License-Identifier: Apache-2.0 */
/*
** alloc_sqlite.c — maps the codecs' allocator hooks (codec.h) onto SQLite's
** allocator, so every byte the extension holds is counted by SQLite and
** subject to its soft heap limit and out-of-memory testing.
**
** Blocks of 4 MiB and more (result BLOBs, accumulators) are marked for
** transparent huge pages, as NumPy marks its large arrays: on Linux, filling
** fresh memory one 4 KiB page fault at a time costs several times more than
** copying into it. It is a hint; where it is unsupported nothing changes.
*/
#if defined(__linux__)
#define _DEFAULT_SOURCE /* madvise and MADV_HUGEPAGE under -std=c99 */
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT3

#include <stdint.h>

#include "codec/codec.h"

#define HUGE_HINT_MIN ((uint64_t)4 << 20)

/* The hint covers the block's whole pages, not just its 2 MiB-aligned
** middle: a large block is a mapping of its own, and advising part of it
** would split it in two, after which glibc can no longer grow it in place
** with mremap and copies it instead.
** The page size is asked for on every such block rather than cached in a
** static: connections on other threads allocate too, and a lazily set
** static would be a data race; one sysconf is nothing next to 4 MiB. */
static void *huge_hint(void *p, uint64_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (p && n >= HUGE_HINT_MIN) {
    long ps = sysconf(_SC_PAGESIZE);
    uintptr_t page = ps > 0 ? (uintptr_t)ps : 4096;
    uintptr_t start = (uintptr_t)p & ~(page - 1);
    uintptr_t end = ((uintptr_t)p + (uintptr_t)n + page - 1) & ~(page - 1);
    (void)madvise((void *)start, end - start, MADV_HUGEPAGE);
  }
#else
  (void)n;
#endif
  return p;
}

void *codec_malloc(uint64_t n) { return huge_hint(sqlite3_malloc64(n), n); }
void *codec_realloc(void *p, uint64_t n) { return huge_hint(sqlite3_realloc64(p, n), n); }
void codec_free(void *p) { sqlite3_free(p); }
