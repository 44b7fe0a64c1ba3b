/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz.h — what the libFuzzer harnesses in tests/fuzz/ share: an assertion
** that aborts (so libFuzzer and the replay driver report it), and the
** property checks every error message must pass.
**
** A harness is one file tests/fuzz/fuzz_NAME.c defining
** LLVMFuzzerTestOneInput, with a line
**     ** seeds: DIR ...
** in its header comment naming seed directories (relative to the repository
** root); its corpus lives in tests/fuzz/corpus/NAME/. See tests/fuzz/run.
**
** Inputs made of several parts separate them with "@@@@" (fuzz_split).
*/
#ifndef AR_FUZZ_H
#define AR_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                      \
    }                                                                               \
  } while (0)

/* For a harness's own reference code: no comparison tracing (clang's
** no_sanitize("coverage") keeps the edge counters), which would only slow
** the fuzzer down in loops whose branches say nothing about the code under
** test. */
#if defined(__clang__)
#define FUZZ_REFERENCE __attribute__((no_sanitize("coverage")))
#else
#define FUZZ_REFERENCE
#endif

/* Is s[0..n) valid UTF-8 (no overlongs, surrogates or code points past
** U+10FFFF)? Error messages end up in other programs' exceptions, which
** decode them strictly. */
static inline int fuzz_utf8_valid(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i], len, k;
    uint32_t cp;
    if (c < 0x80) {
      i++;
      continue;
    }
    if (c >= 0xc2 && c <= 0xdf)
      len = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
      len = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
      len = 4, cp = c & 0x07;
    else
      return 0;
    if (len > n - i) return 0;
    for (k = 1; k < len; k++) {
      if ((s[i + k] & 0xc0) != 0x80) return 0;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
      return 0;
    i += len;
  }
  return 1;
}

/* A codec error: a known code, and a non-empty, valid UTF-8 message (NOMEM
** and TOOBIG become SQLite's own messages, so they need none). */
static inline void fuzz_check_error(int rc, const codec_err *err) {
  FUZZ_CHECK(rc == CODEC_CORRUPT || rc == CODEC_UNSUPPORTED || rc == CODEC_NOMEM || rc == CODEC_TOOBIG ||
             rc == CODEC_RANGE);
  if (rc == CODEC_NOMEM || rc == CODEC_TOOBIG) return;
  FUZZ_CHECK(err->msg[0] != 0);
  FUZZ_CHECK(memchr(err->msg, 0, sizeof(err->msg)) != NULL);
  FUZZ_CHECK(fuzz_utf8_valid((const unsigned char *)err->msg, strlen(err->msg)));
}

/* One part of an input. */
typedef struct fuzz_part {
  const unsigned char *p;
  size_t n;
} fuzz_part;

/* Split data on "@@@@" into at most max parts (the last one takes the
** rest); returns how many. */
static inline int fuzz_split(const uint8_t *data, size_t size, fuzz_part *parts, int max) {
  static const unsigned char sep[4] = {'@', '@', '@', '@'};
  const unsigned char *p = data, *end = data + size;
  int n = 0;
  for (;;) {
    const unsigned char *hit = NULL, *q;
    for (q = p; q + 4 <= end; q++)
      if (memcmp(q, sep, 4) == 0) {
        hit = q;
        break;
      }
    if (!hit || n == max - 1) {
      parts[n].p = p;
      parts[n].n = (size_t)(end - p);
      return n + 1;
    }
    parts[n].p = p;
    parts[n].n = (size_t)(hit - p);
    n++;
    p = hit + 4;
  }
}

/* A small hash of the input, to pick things (an allocation to fail) that
** the input's own bytes should not have to encode. */
static inline uint32_t fuzz_hash(const uint8_t *data, size_t size) {
  uint32_t h = 2166136261u;
  size_t i;
  for (i = 0; i < size; i++) h = (h ^ data[i]) * 16777619u;
  return h;
}

/* --- allocation failures in codec harnesses --------------------------------
** A harness that includes ../host/failalloc.h first gets fuzz_oom_check: it
** runs a pipeline of codec calls once as it is, then again with one of its
** allocations failing (picked by `pick`). The second run must end in the
** first run's result (same code, same output bytes) or in CODEC_NOMEM, and
** both must free everything they allocated. The codecs allocate through
** SQLite (alloc_sqlite.c), which failalloc wraps. */
#ifdef AR_FAILALLOC_H
#include "codec/buf.h"

/* Two buffers hold the same bytes (round-trip checks). */
static inline int fuzz_same_buf(const buf_t *a, const buf_t *b) {
  return a->n == b->n && (!a->n || memcmp(a->p, b->p, (size_t)a->n) == 0);
}

typedef int (*fuzz_pipeline)(const void *arg, buf_t *out);

static inline void fuzz_alloc_setup(void) {
  static int done;
  if (!done) {
    FUZZ_CHECK(failalloc_install() == SQLITE_OK);
    done = 1;
  }
}

static inline void fuzz_oom_check(fuzz_pipeline fn, const void *arg, uint32_t pick) {
  buf_t ref, got;
  long before = failalloc_outstanding, calls = failalloc_calls;
  int rc_ref, rc, failed;
  buf_init(&ref, UINT64_MAX);
  rc_ref = fn(arg, &ref);
  calls = failalloc_calls - calls;
  buf_init(&got, UINT64_MAX);
  failalloc_arm((long)(pick % (uint32_t)(calls + 1)));
  rc = fn(arg, &got);
  failed = failalloc_disarm();
  if (!failed || (rc != CODEC_NOMEM && got.rc != CODEC_NOMEM)) /* the output itself may fail */
    FUZZ_CHECK(rc == rc_ref && got.rc == ref.rc && got.n == ref.n &&
               (!ref.n || memcmp(got.p, ref.p, (size_t)ref.n) == 0));
  buf_free(&ref);
  buf_free(&got);
  FUZZ_CHECK(failalloc_outstanding == before);
}
#endif

#endif
