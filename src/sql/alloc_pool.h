/* SPDX-License-Identifier: Apache-2.0 */
/*
** alloc_pool.h — a bounded pool of large freed blocks behind the codec
** allocator (alloc_sqlite.c): codec_free keeps a block of APOOL_MIN bytes
** or more here instead of returning it, and codec_malloc / codec_realloc
** take the smallest kept block that fits before asking SQLite for new
** memory. See alloc_pool.c for why and for the bounds.
**
** A new function gets the pool by allocating through the codec allocator
** and handing SQLite its blocks with the codec's destructor; nothing here
** is called directly. A decoder (a future packed store's: bytes in, a
** record or array BLOB out) builds its output in a result buffer
** (sql_buf_init, then sql_result_buf: sql_util.h): the block comes from
** codec_malloc, so from the pool when one fits, and goes back to the pool
** when SQLite frees the value. Output that already sits
** in memory of its own goes out with sql_result_blob_copy, never
** SQLITE_TRANSIENT (SQLite's own copy would take fresh pages). Scratch
** (an inflated block, a row of dequantised values) is codec_malloc /
** codec_free, and comes back the same way. A value handed over with
** sqlite3_free or a static destructor bypasses the pool.
*/
#ifndef AR_ALLOC_POOL_H
#define AR_ALLOC_POOL_H

#include <stdint.h>

/* Blocks smaller than this are never kept: malloc serves them from memory
** the process already has. */
#define APOOL_MIN ((uint64_t)1 << 20)
/* The most blocks kept at once. */
#define APOOL_SLOTS 32

/* A kept block of at least n bytes (the smallest such), now the caller's;
** NULL when none fits. */
void *apool_take(uint64_t n);
/* Keep block p of `size` usable bytes; 0 when it is not kept (the caller
** frees it). Keeping may free older blocks to stay within the bound. */
int apool_keep(void *p, uint64_t size);
/* Free every kept block; returns the bytes freed. */
uint64_t apool_release(void);

/* The bound on the bytes kept: set it (bytes >= 0; 0 keeps nothing and
** frees what is kept) and return the bound before; bytes < 0 only reads it. */
int64_t apool_bound(int64_t bytes);
/* Bytes kept now. */
uint64_t apool_held(void);

/* A connection that loaded the extension opened / closed: when the last one
** closes, every kept block is freed. */
void apool_attach(void);
void apool_detach(void);

#endif
