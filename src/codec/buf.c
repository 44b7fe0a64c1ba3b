/* SPDX-License-Identifier: Apache-2.0 */
/*
** buf.c — growable byte buffer (see buf.h).
*/
#include "codec/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void buf_init(buf_t *b, uint64_t limit) {
  b->p = NULL;
  b->n = 0;
  b->cap = 0;
  b->limit = limit;
  b->rc = CODEC_OK;
  b->result = 0;
  b->off = b->tail = 0;
}

void buf_init_result(buf_t *b, uint64_t limit) {
  buf_init(b, limit);
  b->result = 1;
}

/* A result buffer's block: a header of PLACE_HEAD bytes whose last 8 hold
** `off`, then the bytes at p = block + off, then `tail` bytes. */
#define PLACE_HEAD 16
#define PLACE_ALIGN ((uint64_t)2 << 20)

static unsigned char *result_block(buf_t *b, uint64_t cap) {
  unsigned char *block, *p;
  uint64_t total;
  if (!b->p) {
    b->tail = cap >= BUF_PLACE_MIN ? PLACE_ALIGN : 0;
    if (size_add(cap, PLACE_HEAD + 2 * b->tail, &total)) return NULL;
    if (!(block = codec_malloc(total))) return NULL;
    b->off = PLACE_HEAD;
    if (b->tail) {
      uintptr_t at = ((uintptr_t)block + PLACE_HEAD + PLACE_ALIGN - 1) & ~(uintptr_t)(PLACE_ALIGN - 1);
      b->off = (uint64_t)(at - (uintptr_t)block);
    }
    b->tail = total - b->off - cap;
  } else {
    /* The bytes keep their offset: a moved block may lose the 2 MiB
    ** alignment, which is only a hint. */
    if (size_add(b->off, cap, &total) || size_add(total, b->tail, &total)) return NULL;
    if (!(block = codec_realloc(b->p - b->off, total))) return NULL;
  }
  p = block + b->off;
  memcpy(p - 8, &b->off, 8);
  return p;
}

void buf_release(void *p) {
  uint64_t off;
  if (!p) return;
  memcpy(&off, (unsigned char *)p - 8, 8);
  codec_free((unsigned char *)p - off);
}

int buf_reserve(buf_t *b, uint64_t extra) {
  uint64_t need, cap;
  unsigned char *p;
  if (b->rc) return b->rc;
  if (size_add(b->n, extra, &need) || need > b->limit) return b->rc = CODEC_TOOBIG;
  if (need <= b->cap) return CODEC_OK;
  /* Grow geometrically so appends stay amortised O(1), but never past the
  ** limit: a result that fits must not fail for want of headroom. The first
  ** allocation is the size asked for: callers that know a result's size
  ** reserve it up front, and a power-of-two rounding would waste up to half
  ** of a large result. */
  cap = b->cap < 64 ? 64 : b->cap;
  if (!b->cap && need > cap) cap = need;
  while (cap < need) cap = (cap > UINT64_MAX / 2) ? need : cap * 2;
  if (cap > b->limit) cap = b->limit;
  p = b->result ? result_block(b, cap) : codec_realloc(b->p, cap);
  if (!p) return b->rc = CODEC_NOMEM;
  if (!b->result) { /* a block from the pool may be larger: use all of it */
    uint64_t real = codec_msize(p);
    if (real > cap) cap = real < b->limit ? real : b->limit;
  }
  b->p = p;
  b->cap = cap;
  return CODEC_OK;
}

unsigned char *buf_extend(buf_t *b, uint64_t len) {
  static unsigned char nothing[1];
  unsigned char *dst;
  if (buf_reserve(b, len)) return NULL;
  /* Zero bytes on a buffer that never allocated: NULL + 0 is undefined in C,
  ** and NULL means failure here, so hand out a valid address to write 0
  ** bytes at. */
  if (!b->p) return nothing;
  dst = b->p + b->n;
  b->n += len;
  return dst;
}

void buf_append(buf_t *b, const void *src, uint64_t len) {
  unsigned char *dst = buf_extend(b, len);
  if (dst && len) memcpy(dst, src, (size_t)len);
}

void buf_putc(buf_t *b, char c) {
  if (b->n < b->cap && !b->rc) {
    b->p[b->n++] = (unsigned char)c;
    return;
  }
  buf_append(b, &c, 1);
}

void buf_puts(buf_t *b, const char *s) { buf_append(b, s, strlen(s)); }

void buf_printf(buf_t *b, const char *fmt, ...) {
  char small[128];
  va_list ap;
  int len;
  va_start(ap, fmt);
  len = vsnprintf(small, sizeof(small), fmt, ap);
  va_end(ap);
  if (len < 0) return;
  if ((size_t)len < sizeof(small)) {
    buf_append(b, small, (uint64_t)len);
    return;
  }
  if (buf_reserve(b, (uint64_t)len + 1)) return;
  va_start(ap, fmt);
  vsnprintf((char *)b->p + b->n, (size_t)len + 1, fmt, ap);
  va_end(ap);
  b->n += (uint64_t)len;
}

unsigned char *buf_detach(buf_t *b, uint64_t *len) {
  unsigned char *p = b->p;
  if (len) *len = b->n;
  b->p = NULL;
  b->n = b->cap = 0;
  return p;
}

void buf_free(buf_t *b) {
  if (b->result)
    buf_release(b->p);
  else
    codec_free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}

int buf_grow(void *items, uint32_t *cap, size_t elem) {
  void *old, *p;
  uint32_t ncap = *cap ? *cap * 2 : 16;
  if (*cap > 0x1fffffff) return CODEC_NOMEM;
  memcpy(&old, items, sizeof(old)); /* items is a T **, read as void * */
  p = codec_realloc(old, (uint64_t)ncap * elem);
  if (!p) return CODEC_NOMEM;
  memcpy(items, &p, sizeof(p));
  *cap = ncap;
  return CODEC_OK;
}

void *buf_push_item(void *items, int *n, int *cap, const void *small, size_t elem) {
  unsigned char *old, *p;
  memcpy(&old, items, sizeof(old)); /* items is a T **, read as void * */
  if (*n == *cap) {
    int ncap = *cap * 2;
    if (ncap > 0x3fffffff) return NULL;
    if (old == (const unsigned char *)small) {
      p = codec_malloc((uint64_t)ncap * elem);
      if (p) memcpy(p, small, (size_t)*cap * elem);
    } else {
      p = codec_realloc(old, (uint64_t)ncap * elem);
    }
    if (!p) return NULL;
    memcpy(items, &p, sizeof(p));
    *cap = ncap;
    old = p;
  }
  return old + (size_t)(*n)++ * elem;
}
