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
#include <string.h>

#include "codec/codec.h"
#include "sql/alloc_pool.h"

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

/* A new block from SQLite; when that fails and the pool held blocks, they
** are freed and the allocation tried again. */
static void *fresh(void *p, uint64_t n) {
  void *q = p ? sqlite3_realloc64(p, n) : sqlite3_malloc64(n);
  if (!q && n >= APOOL_MIN && apool_release()) q = p ? sqlite3_realloc64(p, n) : sqlite3_malloc64(n);
  return huge_hint(q, n);
}

void *codec_malloc(uint64_t n) {
  void *p = n >= APOOL_MIN ? apool_take(n) : NULL;
  return p ? p : fresh(NULL, n);
}

void *codec_realloc(void *p, uint64_t n) {
  uint64_t have;
  void *q;
  if (!p) return codec_malloc(n);
  have = sqlite3_msize(p);
  if (n <= have && have >= APOOL_MIN && n > 0) return p; /* a large block is kept whole: it goes back to the pool */
  if (n > have && n >= APOOL_MIN && (q = apool_take(n)) != NULL) {
    memcpy(q, p, (size_t)have);
    codec_free(p);
    return q;
  }
  return fresh(p, n);
}

void codec_free(void *p) {
  if (p && !apool_keep(p, sqlite3_msize(p))) sqlite3_free(p);
}

uint64_t codec_msize(const void *p) { return p ? sqlite3_msize((void *)p) : 0; }
