/* SPDX-License-Identifier: Apache-2.0 */
/*
** alloc_pool.c — the pool of large freed blocks (alloc_pool.h).
**
** Why: glibc's malloc maps every block of 32 MiB or more (and, until its
** threshold has grown, every block of 128 KiB or more) fresh from the
** kernel and unmaps it when freed, and the kernel zeroes each page of a
** fresh mapping on its first write. A query that keeps a round's rows
** (ar_median's 940 MB, ar_krum's 500 MB) or returns a model-sized BLOB per
** row paid that zeroing again at every statement: up to several times the
** cost of the copy itself. Blocks freed through codec_free, and so every
** result handed to SQLite with the extension's destructor, come back here
** and are handed out again, already mapped.
**
** Bounds. The pool keeps at most `bound` bytes (default: 1 GiB, or an
** eighth of the machine's memory if that is less; AR_POOL_BYTES in the
** environment, or ar_pool(bytes), sets it; 0 turns it off), in at most
** APOOL_SLOTS blocks; when a new block would pass the bound, the blocks
** kept longest are freed first. A block larger than the bound is freed at
** once. Kept blocks are SQLite memory (sqlite3_memory_used counts them), so
** under a soft or hard heap limit (sqlite3_soft_heap_limit64,
** sqlite3_hard_heap_limit64, PRAGMA soft_heap_limit / hard_heap_limit) the
** pool keeps nothing, and frees what it kept at its next use: such a
** process wants its memory back. SQLite gives no hook for the moment a
** limit is set, so a limit below what the pool holds makes SQLite's own
** allocations fail until then: empty it first (ar_pool(0)). When the last
** connection that loaded the extension closes, every kept block is freed,
** so a process that closes its databases holds nothing of ours.
**
** Process-wide and thread-safe: one mutex around a small table; the
** blocks' memory is never touched here. Without POSIX threads (a mingw
** build) the pool keeps nothing.
*/
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* sysconf(_SC_PHYS_PAGES) under -std=c99 */
#endif
#include "sql/alloc_pool.h"

#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT3

#include <stdlib.h>

#if !defined(AR_NO_THREADS) && (defined(__unix__) || defined(__unix) || defined(__APPLE__))
#include <unistd.h>
#if defined(_POSIX_THREADS) && _POSIX_THREADS > 0
#define APOOL_PTHREADS 1
#endif
#endif

#define APOOL_DEFAULT ((int64_t)1 << 30)

#if defined(APOOL_PTHREADS)

#include <pthread.h>

typedef struct slot {
  void *p;
  uint64_t size;
  uint64_t age; /* when it was kept: the smallest is the oldest */
} slot;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
/* Under mu: */
static slot slots[APOOL_SLOTS];
static int nslots;
static uint64_t held, clock_now;
static int64_t bound;
static long connections;

static void init(void) {
  int64_t b = APOOL_DEFAULT;
  const char *s = getenv("AR_POOL_BYTES");
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && (int64_t)pages / 8 < b / (int64_t)page) b = (int64_t)pages / 8 * (int64_t)page;
#endif
  if (s && *s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*end && v >= 0) b = (int64_t)v;
  }
  pthread_mutex_lock(&mu);
  bound = b;
  pthread_mutex_unlock(&mu);
}

/* Under a heap limit SQLite must be able to use every byte below it. */
static int heap_limited(void) { return sqlite3_soft_heap_limit64(-1) > 0 || sqlite3_hard_heap_limit64(-1) > 0; }

/* Remove slot i (under mu); returns its block. */
static void *unslot(int i) {
  void *p = slots[i].p;
  held -= slots[i].size;
  slots[i] = slots[--nslots];
  return p;
}

/* The oldest slot (under mu, nslots > 0). */
static int oldest(void) {
  int i, o = 0;
  for (i = 1; i < nslots; i++)
    if (slots[i].age < slots[o].age) o = i;
  return o;
}

void *apool_take(uint64_t n) {
  void *p = NULL;
  int i, best = -1;
  if (heap_limited()) { /* a limit set since blocks were kept: they go back */
    apool_release();
    return NULL;
  }
  pthread_once(&once, init);
  pthread_mutex_lock(&mu);
  for (i = 0; i < nslots; i++)
    if (slots[i].size >= n && (best < 0 || slots[i].size < slots[best].size)) best = i;
  if (best >= 0) p = unslot(best);
  pthread_mutex_unlock(&mu);
  return p;
}

int apool_keep(void *p, uint64_t size) {
  void *evicted[APOOL_SLOTS + 1];
  int nev = 0, kept = 0, i;
  if (!p || size < APOOL_MIN) return 0;
  if (heap_limited()) {
    apool_release();
    return 0;
  }
  pthread_once(&once, init);
  pthread_mutex_lock(&mu);
  if (connections > 0 && bound > 0 && size <= (uint64_t)bound) {
    while (nslots > 0 && (nslots == APOOL_SLOTS || held + size > (uint64_t)bound)) evicted[nev++] = unslot(oldest());
    slots[nslots].p = p;
    slots[nslots].size = size;
    slots[nslots].age = ++clock_now;
    nslots++;
    held += size;
    kept = 1;
  }
  pthread_mutex_unlock(&mu);
  for (i = 0; i < nev; i++) sqlite3_free(evicted[i]);
  return kept;
}

uint64_t apool_release(void) {
  void *all[APOOL_SLOTS];
  int n = 0, i;
  uint64_t bytes;
  pthread_once(&once, init);
  pthread_mutex_lock(&mu);
  bytes = held;
  while (nslots > 0) all[n++] = unslot(nslots - 1);
  pthread_mutex_unlock(&mu);
  for (i = 0; i < n; i++) sqlite3_free(all[i]);
  return bytes;
}

int64_t apool_bound(int64_t bytes) {
  int64_t before;
  pthread_once(&once, init);
  pthread_mutex_lock(&mu);
  before = bound;
  if (bytes >= 0) bound = bytes;
  pthread_mutex_unlock(&mu);
  if (bytes >= 0 && (uint64_t)bytes < apool_held()) {
    /* over the new bound: start again from nothing */
    apool_release();
  }
  return before;
}

uint64_t apool_held(void) {
  uint64_t h;
  pthread_once(&once, init);
  pthread_mutex_lock(&mu);
  h = held;
  pthread_mutex_unlock(&mu);
  return h;
}

void apool_attach(void) {
  pthread_once(&once, init);
  pthread_mutex_lock(&mu);
  connections++;
  pthread_mutex_unlock(&mu);
}

void apool_detach(void) {
  long left;
  pthread_once(&once, init);
  pthread_mutex_lock(&mu);
  left = --connections;
  pthread_mutex_unlock(&mu);
  if (left <= 0) apool_release();
}

#else /* no threads: nothing is kept */

void *apool_take(uint64_t n) {
  (void)n;
  return NULL;
}
int apool_keep(void *p, uint64_t size) {
  (void)p;
  (void)size;
  return 0;
}
uint64_t apool_release(void) { return 0; }
int64_t apool_bound(int64_t bytes) {
  (void)bytes;
  return 0;
}
uint64_t apool_held(void) { return 0; }
void apool_attach(void) {}
void apool_detach(void) {}

#endif
