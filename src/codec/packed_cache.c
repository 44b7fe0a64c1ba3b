/* SPDX-License-Identifier: Apache-2.0 */
/*
** packed_cache.c — a connection's last unpacked records (packed_cache.h).
*/
#include "codec/packed_cache.h"

#include <string.h>

#include "codec/packed.h"
#include "codec/xxh64.h"

/* A shared block: its reference count before its bytes (16 bytes, which
** keeps the bytes as aligned as the allocator's blocks). */
#define SHARED_HEAD 16

/* SQLite calls a destructor on the thread that lets go of the value; a
** connection may move between threads, so the count is atomic. */
static long shared_adjust(unsigned char *block, long by) {
  long *refs = (long *)(void *)block;
#if defined(__GNUC__)
  return __atomic_add_fetch(refs, by, __ATOMIC_ACQ_REL);
#else
  return *refs += by;
#endif
}

unsigned char *shared_alloc(uint64_t n) {
  unsigned char *block;
  uint64_t total;
  if (size_add(n, SHARED_HEAD, &total) || !(block = codec_malloc(total))) return NULL;
  *(long *)(void *)block = 1;
  return block + SHARED_HEAD;
}

void shared_release(void *data) {
  unsigned char *block;
  if (!data) return;
  block = (unsigned char *)data - SHARED_HEAD;
  if (shared_adjust(block, -1) == 0) codec_free(block);
}

typedef struct cache_entry {
  unsigned char *key; /* the packed BLOB, copied */
  uint64_t key_n;
  unsigned char *record; /* a shared block; NULL: empty slot */
  uint64_t size;
  uint64_t used; /* when it was last hit or kept */
} cache_entry;

struct packed_cache {
  cache_entry e[PACKED_CACHE_ENTRIES];
  uint64_t clock;
};

packed_cache *packed_cache_new(void) {
  packed_cache *c = codec_malloc(sizeof(*c));
  if (c) memset(c, 0, sizeof(*c));
  return c;
}

static void drop(cache_entry *e) {
  shared_release(e->record);
  codec_free(e->key);
  memset(e, 0, sizeof(*e));
}

void packed_cache_free(packed_cache *c) {
  int i;
  if (!c) return;
  for (i = 0; i < PACKED_CACHE_ENTRIES; i++) drop(&c->e[i]);
  codec_free(c);
}

/* Would unpacking p[0..n) with this base pass the base's checks? (The
** record was kept after unpacking with a base that did, or without one.) */
static int base_checks(const unsigned char *p, uint64_t n, const unsigned char *base, uint64_t base_n) {
  packed_head h;
  codec_err err;
  if (packed_head_parse(p, n, &h, &err) != CODEC_OK) return 0;
  if (!(h.flags & PACKED_HAS_BASE)) return 1;
  return base && base_n == h.base_size && xxh64(base, base_n, 0) == h.base_hash;
}

unsigned char *packed_cache_get(packed_cache *c, const unsigned char *p, uint64_t n, const unsigned char *base,
                                uint64_t base_n, uint64_t *size) {
  int i;
  for (i = 0; i < PACKED_CACHE_ENTRIES; i++) {
    cache_entry *e = &c->e[i];
    if (!e->record || e->key_n != n || memcmp(e->key, p, (size_t)n) != 0) continue;
    if (!base_checks(p, n, base, base_n)) return NULL;
    e->used = ++c->clock;
    shared_adjust(e->record - SHARED_HEAD, 1);
    *size = e->size;
    return e->record;
  }
  return NULL;
}

void packed_cache_put(packed_cache *c, const unsigned char *p, uint64_t n, unsigned char *record, uint64_t size) {
  cache_entry *slot = NULL;
  uint64_t bytes, held = 0;
  int i;
  if (size_add(size, n, &bytes) || bytes > PACKED_CACHE_BYTES) return;
  /* the least recently used goes first, until the new one fits */
  for (;;) {
    cache_entry *oldest = NULL;
    held = 0;
    for (i = 0; i < PACKED_CACHE_ENTRIES; i++) {
      cache_entry *e = &c->e[i];
      if (!e->record) {
        slot = slot ? slot : e;
        continue;
      }
      held += e->size + e->key_n;
      if (!oldest || e->used < oldest->used) oldest = e;
    }
    if (slot && held + bytes <= PACKED_CACHE_BYTES) break;
    drop(oldest); /* not NULL: the cache holds something, or the new one would fit */
    slot = NULL;
  }
  if (!(slot->key = codec_malloc(n ? n : 1))) return;
  memcpy(slot->key, p, (size_t)n);
  slot->key_n = n;
  slot->record = record;
  slot->size = size;
  slot->used = ++c->clock;
  shared_adjust(record - SHARED_HEAD, 1);
}
