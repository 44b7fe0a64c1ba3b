/* SPDX-License-Identifier: Apache-2.0 */
/*
** codec.h — what every pure codec (npy.c, record.c, json.c, ...) shares:
** return codes, the error-message buffer, the allocator hooks and a few
** overflow-checked size helpers.
**
** Codecs never include sqlite3ext.h. They allocate through codec_malloc /
** codec_realloc / codec_free, which the extension maps onto sqlite3_malloc64 /
** sqlite3_realloc64 / sqlite3_free (alloc_sqlite.c) and the C unit tests map
** onto a counting, fail-on-demand allocator (tests/c/unit_main.c).
*/
#ifndef AR_CODEC_H
#define AR_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* Return codes of every codec function. */
enum {
  CODEC_OK = 0,
  CODEC_CORRUPT = 1,     /* malformed input */
  CODEC_UNSUPPORTED = 2, /* well-formed but outside what we handle */
  CODEC_NOMEM = 3,       /* an allocation failed */
  CODEC_TOOBIG = 4,      /* a result would exceed the caller's size limit */
  CODEC_RANGE = 5        /* a caller-supplied value is out of range */
};

/* A problem description without the function name; the SQL layer prefixes
** "fname: " when it reports it. */
typedef struct codec_err {
  char msg[240];
} codec_err;

/* printf-style; returns code so callers can write `return codec_fail(...)`. */
int codec_fail(codec_err *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The failure a buffer or allocation ended in, as a message: CODEC_NOMEM is
** "out of memory", CODEC_TOOBIG "result too large". Returns rc. */
int codec_fail_rc(codec_err *err, int rc);
/* codec_fail_rc(err, CODEC_NOMEM). */
int codec_nomem(codec_err *err);

/* Length of the valid UTF-8 sequence at s[0..n) (1-4), or 0 when it is not
** one (overlong forms, surrogates and code points past U+10FFFF included). */
size_t codec_utf8_seq(const unsigned char *s, uint64_t n);

/* Is s[0..n) valid UTF-8? */
int codec_utf8_valid(const unsigned char *s, uint64_t n);
/* Number of Unicode code points in valid UTF-8 (Python's len(str)). */
uint64_t codec_utf8_length(const unsigned char *s, uint64_t n);

/* Untrusted bytes quoted for an error message: valid UTF-8 is kept, control
** characters and bytes that are not UTF-8 become '?', and the text is cut at
** 48 bytes (then "...") without splitting a character, so messages are
** always valid, printable UTF-8. out holds `cap` bytes (CODEC_QUOTE_MAX
** is enough); returns out. */
#define CODEC_QUOTE_MAX 64
const char *codec_quote(char *out, size_t cap, const void *src, uint64_t n);

/* The other formats people pass where a record or a .npy belongs, told by
** their first bytes, so a reader's error can name the converter: a .npy
** ("\x93NUMPY"), a .npz (a ZIP: "PK\x03\x04", or "PK\x05\x06" when
** empty) or a safetensors file (an 8-byte little-endian header length N,
** then N bytes starting with '{') or a packed record (packed.h's magic,
** "\x07ARPACK"). Only for messages: a match proves nothing. */
enum { CODEC_SNIFF_NONE, CODEC_SNIFF_NPY, CODEC_SNIFF_NPZ, CODEC_SNIFF_SAFETENSORS, CODEC_SNIFF_PACKED };
int codec_sniff(const unsigned char *p, uint64_t n);

/* A view of bytes somewhere else (a BLOB, a record's field); p may be NULL
** only when n is 0. */
typedef struct codec_span {
  const unsigned char *p;
  uint64_t n;
} codec_span;

/* Allocator hooks (see file comment). */
void *codec_malloc(uint64_t n);
void *codec_realloc(void *p, uint64_t n);
void codec_free(void *p);
/* The usable size of a block (at least what was asked for; 0 for NULL). */
uint64_t codec_msize(const void *p);

/* Overflow-checked arithmetic on sizes: return 0 and store the result, or
** return 1 when it does not fit in uint64_t. */
static inline int size_add(uint64_t a, uint64_t b, uint64_t *out) {
  if (a > UINT64_MAX - b) return 1;
  *out = a + b;
  return 0;
}
static inline int size_mul(uint64_t a, uint64_t b, uint64_t *out) {
  if (a != 0 && b > UINT64_MAX / a) return 1;
  *out = a * b;
  return 0;
}

#endif
