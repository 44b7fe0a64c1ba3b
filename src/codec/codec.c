/* SPDX-License-Identifier: Apache-2.0 */
/*
** codec.c — what every codec shares (codec.h): error messages, UTF-8
** checks and the quoting of untrusted text for messages.
*/
#include "codec/codec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int codec_fail(codec_err *err, int code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    int len;
    va_start(ap, fmt);
    len = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    if (len >= (int)sizeof(err->msg)) {
      /* Cut: drop a character the cut split, so the message stays UTF-8. */
      size_t n = sizeof(err->msg) - 1, start = n;
      while (start > 0 && n - start < 4 && ((unsigned char)err->msg[start - 1] & 0xc0) == 0x80) start--;
      if (start > 0 && (unsigned char)err->msg[start - 1] >= 0xc0) start--;
      if (start < n && codec_utf8_seq((const unsigned char *)err->msg + start, n - start) != (size_t)(n - start))
        err->msg[start] = 0;
    }
  }
  return code;
}

int codec_fail_rc(codec_err *err, int rc) {
  return codec_fail(err, rc, rc == CODEC_NOMEM ? "out of memory" : "result too large");
}

int codec_nomem(codec_err *err) { return codec_fail_rc(err, CODEC_NOMEM); }

size_t codec_utf8_seq(const unsigned char *s, uint64_t n) {
  unsigned char c = s[0];
  size_t len, k;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf)
    len = 2, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef)
    len = 3, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4)
    len = 4, cp = c & 0x07;
  else
    return 0;
  if (len > n) return 0;
  for (k = 1; k < len; k++) {
    if ((s[k] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[k] & 0x3f);
  }
  /* overlong forms, surrogates, beyond U+10FFFF */
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return len;
}

const char *codec_quote(char *out, size_t cap, const void *src, uint64_t n) {
  const unsigned char *s = src;
  size_t limit = cap > 16 ? cap - 4 : 0, o = 0;
  uint64_t i = 0;
  if (limit > 48) limit = 48;
  while (i < n) {
    size_t len = codec_utf8_seq(s + i, n - i);
    int bad = len == 0 || (len == 1 && (s[i] < 0x20 || s[i] == 0x7f));
    if (o + (bad ? 1 : len) > limit) {
      memcpy(out + o, "...", 3);
      o += 3;
      break;
    }
    if (bad) {
      out[o++] = '?';
      i++;
    } else {
      memcpy(out + o, s + i, len);
      o += len;
      i += len;
    }
  }
  if (cap) out[o] = 0;
  return out;
}

int codec_utf8_valid(const unsigned char *s, uint64_t n) {
  uint64_t i = 0;
  while (i < n) {
    size_t len;
    if (s[i] < 0x80) { /* ASCII, nearly every key and dtype: no sequence to decode */
      i++;
      continue;
    }
    len = codec_utf8_seq(s + i, n - i);
    if (!len) return 0;
    i += len;
  }
  return 1;
}

uint64_t codec_utf8_length(const unsigned char *s, uint64_t n) {
  uint64_t i, count = 0;
  for (i = 0; i < n; i++) count += (s[i] & 0xc0) != 0x80;
  return count;
}

int codec_sniff(const unsigned char *p, uint64_t n) {
  uint64_t hlen = 0;
  int k;
  if (n >= 6 && memcmp(p, "\x93NUMPY", 6) == 0) return CODEC_SNIFF_NPY;
  if (n >= 7 && memcmp(p,
                       "\x07"
                       "ARPACK",
                       7) == 0)
    return CODEC_SNIFF_PACKED; /* packed.h's magic */
  if (n >= 4 && (memcmp(p, "PK\x03\x04", 4) == 0 || memcmp(p, "PK\x05\x06", 4) == 0)) return CODEC_SNIFF_NPZ;
  if (n < 10) return CODEC_SNIFF_NONE;
  for (k = 7; k >= 0; k--) hlen = hlen << 8 | p[k];
  return hlen >= 2 && hlen <= n - 8 && p[8] == '{' ? CODEC_SNIFF_SAFETENSORS : CODEC_SNIFF_NONE;
}
