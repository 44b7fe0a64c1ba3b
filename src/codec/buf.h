/* SPDX-License-Identifier: Apache-2.0 */
/*
** buf.h — a growable byte buffer for building results (JSON text, .npy files,
** record BLOBs). It remembers its first failure, so callers append freely and
** check once at the end. A size limit (the caller's SQLITE_LIMIT_LENGTH) turns
** oversize results into CODEC_TOOBIG before anything huge is allocated.
*/
#ifndef AR_BUF_H
#define AR_BUF_H

#include "codec/codec.h"

typedef struct buf_t {
  unsigned char *p;
  uint64_t n;     /* bytes used */
  uint64_t cap;   /* bytes allocated */
  uint64_t limit; /* largest n allowed */
  int rc;         /* CODEC_OK, CODEC_NOMEM or CODEC_TOOBIG */
  int result;     /* made by buf_init_result: p lies inside its block */
  uint64_t off;   /* result buffers: p - (start of the block) */
  uint64_t tail;  /* result buffers: bytes of the block after p + cap */
} buf_t;

void buf_init(buf_t *b, uint64_t limit);
/* A buffer for a result handed over after buf_detach (to SQLite): its bytes
** are freed with buf_release, not codec_free. A large one (BUF_PLACE_MIN bytes
** or more at its first allocation) starts on a 2 MiB boundary of a block
** that reaches 2 MiB past its end, so transparent huge pages can back all of
** it: an unaligned block keeps up to 2 MiB at each end in 4 KiB pages, a
** page fault each. The padding is address space only, never touched. */
#define BUF_PLACE_MIN ((uint64_t)8 << 20)
void buf_init_result(buf_t *b, uint64_t limit);
/* Free the bytes of a result buffer that buf_detach gave out (NULL: nothing). */
void buf_release(void *p);
/* Make room for `extra` more bytes; returns the buffer's rc. */
int buf_reserve(buf_t *b, uint64_t extra);
void buf_append(buf_t *b, const void *src, uint64_t len);
void buf_putc(buf_t *b, char c);
void buf_puts(buf_t *b, const char *s);
void buf_printf(buf_t *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Append `len` uninitialised bytes and return where they start, or NULL on
** failure (b->rc says which) and for len 0 on a buffer with no storage yet. */
unsigned char *buf_extend(buf_t *b, uint64_t len);
/* The address of byte `off` of the contents (off <= n): for an empty
** buffer that never allocated, a valid address to read 0 bytes at, since
** NULL + 0 is undefined in C. */
static inline const unsigned char *buf_at(const buf_t *b, uint64_t off) {
  return b->p ? b->p + off : (const unsigned char *)"";
}
/* Hand the bytes to the caller, who frees them with codec_free (buf_release
** for a result buffer); the buffer is left empty. Returns NULL for an empty
** buffer. */
unsigned char *buf_detach(buf_t *b, uint64_t *len);
void buf_free(buf_t *b);

/* Grow an array of elem-byte items: *(T **)items gets room for twice *cap
** (at least 16) items. CODEC_OK, or CODEC_NOMEM with the array unchanged.
**   if (v->n == v->cap && buf_grow(&v->items, &v->cap, sizeof(*v->items))) ... */
int buf_grow(void *items, uint32_t *cap, size_t elem);

/* Append one elem-byte item to an array that starts in inline storage
** (`small`, *cap items) and moves to the heap when it outgrows it; *items
** is a T * read and written through this void * (like buf_grow). Returns the
** new item (uninitialised), or NULL when out of memory (array unchanged). */
void *buf_push_item(void *items, int *n, int *cap, const void *small, size_t elem);

#endif
