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

#endif
