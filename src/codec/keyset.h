/* SPDX-License-Identifier: Apache-2.0 */
/*
** keyset.h — a hash set of byte-string keys mapping each to an int, used to
** find duplicate keys while parsing, merging and aggregating records. Keys
** are copied into an arena, so callers' buffers may move or go away.
** Keys come from untrusted BLOBs: the hash is seeded per set and finished
** with a full mixer, so nobody can prepare keys that all land in one slot
** run (which would make parsing a record quadratic).
*/
#ifndef AR_KEYSET_H
#define AR_KEYSET_H

#include "codec/buf.h"

typedef struct ks_slot {
  uint64_t hash, off, len;
  int value; /* -1: empty slot */
} ks_slot;

typedef struct keyset_t {
  buf_t arena;
  ks_slot *slots;
  uint64_t cap, count;
  uint64_t seed; /* per set, so colliding keys cannot be made in advance */
} keyset_t;

void keyset_init(keyset_t *ks);
void keyset_free(keyset_t *ks);
/* The value stored for key, or -1. */
int keyset_get(const keyset_t *ks, const void *key, uint64_t n);
/* Store key -> value (key must not be present). CODEC_OK or CODEC_NOMEM. */
int keyset_put(keyset_t *ks, const void *key, uint64_t n, int value);

/* The first repeated key among n items of `stride` bytes each, whose
** codec_span key sits `key_off` bytes into the item: *first and *second are
** the two positions, *second -1 when every key is unique. Small sets are
** compared pairwise, larger ones through a keyset. CODEC_OK or CODEC_NOMEM. */
int keyset_find_duplicate(const void *items, int n, size_t stride, size_t key_off, int *first, int *second);

#endif
