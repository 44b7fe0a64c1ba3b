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

typedef struct ar_keyset {
  ar_buf arena;
  ks_slot *slots;
  uint64_t cap, count;
  uint64_t seed; /* per set, so colliding keys cannot be made in advance */
} ar_keyset;

void ar_keyset_init(ar_keyset *ks);
void ar_keyset_free(ar_keyset *ks);
/* The value stored for key, or -1. */
int ar_keyset_get(const ar_keyset *ks, const void *key, uint64_t n);
/* Store key -> value (key must not be present). CODEC_OK or CODEC_NOMEM. */
int ar_keyset_put(ar_keyset *ks, const void *key, uint64_t n, int value);

#endif
