/*
** buf.c — growable byte buffer (see buf.h) and codec_fail().
*/
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int codec_fail(codec_err *err, int code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
  }
  return code;
}

void buf_init(ar_buf *b, uint64_t limit) {
  b->p = NULL;
  b->n = 0;
  b->cap = 0;
  b->limit = limit;
  b->rc = CODEC_OK;
}

int buf_reserve(ar_buf *b, uint64_t extra) {
  uint64_t need, cap;
  unsigned char *p;
  if (b->rc) return b->rc;
  if (size_add(b->n, extra, &need) || need > b->limit) return b->rc = CODEC_TOOBIG;
  if (need <= b->cap) return CODEC_OK;
  /* Grow geometrically so appends stay amortised O(1), but never past the
  ** limit: a result that fits must not fail for want of headroom. */
  cap = b->cap < 64 ? 64 : b->cap;
  while (cap < need) cap = (cap > UINT64_MAX / 2) ? need : cap * 2;
  if (cap > b->limit) cap = b->limit;
  p = ar_realloc(b->p, cap);
  if (!p) return b->rc = CODEC_NOMEM;
  b->p = p;
  b->cap = cap;
  return CODEC_OK;
}

unsigned char *buf_extend(ar_buf *b, uint64_t len) {
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

void buf_append(ar_buf *b, const void *src, uint64_t len) {
  unsigned char *dst = buf_extend(b, len);
  if (dst && len) memcpy(dst, src, (size_t)len);
}

void buf_putc(ar_buf *b, char c) {
  if (b->n < b->cap && !b->rc) {
    b->p[b->n++] = (unsigned char)c;
    return;
  }
  buf_append(b, &c, 1);
}

void buf_puts(ar_buf *b, const char *s) { buf_append(b, s, strlen(s)); }

void buf_printf(ar_buf *b, const char *fmt, ...) {
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

unsigned char *buf_detach(ar_buf *b, uint64_t *len) {
  unsigned char *p = b->p;
  if (len) *len = b->n;
  b->p = NULL;
  b->n = b->cap = 0;
  return p;
}

void buf_free(ar_buf *b) {
  ar_free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}
