/* SPDX-License-Identifier: Apache-2.0 */
/*
** packed_cache.h — the last records a connection unpacked, so that a query
** that unpacks the same packed BLOB row after row (a view whose every reply
** is unpacked against the global model it started from, itself unpacked
** from its store) unpacks it once.
**
** At most PACKED_CACHE_ENTRIES records, PACKED_CACHE_BYTES in all (the
** records and a copy of each packed BLOB, the key), least recently used
** first out. A hit is exact: the packed BLOB is compared byte for byte with
** the kept copy, and a base given with it is checked as unpacking checks it
** (its size, then its XXH64 against the header's); anything else is a miss,
** and unpacking runs and reports as it always does, so results and errors
** never depend on what the cache holds.
**
** Results are shared, not copied: a record is one reference-counted block
** (shared_alloc), handed to SQLite with shared_release as its destructor
** and kept by the cache with a reference of its own; the last one to let go
** frees it. Everything goes through the codec allocator.
*/
#ifndef AR_PACKED_CACHE_H
#define AR_PACKED_CACHE_H

#include "codec/codec.h"

#define PACKED_CACHE_ENTRIES 4
#define PACKED_CACHE_BYTES ((uint64_t)256 << 20)

typedef struct packed_cache packed_cache;

/* NULL when out of memory. */
packed_cache *packed_cache_new(void);
void packed_cache_free(packed_cache *c);

/* A shared block of n bytes (NULL when out of memory), with one reference. */
unsigned char *shared_alloc(uint64_t n);
/* Drop one reference to a shared block (NULL: nothing); the last frees it.
** A `void (*)(void *)`, for sqlite3_result_blob64. */
void shared_release(void *data);

/* The record kept for the packed BLOB p[0..n) unpacked against base (NULL:
** none given), with a reference taken for the caller, and its size in
** *size; NULL on a miss. */
unsigned char *packed_cache_get(packed_cache *c, const unsigned char *p, uint64_t n, const unsigned char *base,
                                uint64_t base_n, uint64_t *size);

/* Keep record (a shared block of size bytes) as what p[0..n) unpacks to:
** the cache copies p and takes a reference. Nothing is kept when it does
** not fit or memory runs out. */
void packed_cache_put(packed_cache *c, const unsigned char *p, uint64_t n, unsigned char *record, uint64_t size);

#endif
