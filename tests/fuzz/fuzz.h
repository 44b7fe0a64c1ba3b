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
*/
#ifndef AR_FUZZ_H
#define AR_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                              \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond);  \
      abort();                                                                        \
    }                                                                                 \
  } while (0)

/* Is s[0..n) valid UTF-8 (no overlongs, surrogates or code points past
** U+10FFFF)? Error messages end up in other programs' exceptions, which
** decode them strictly. */
static inline int fuzz_utf8_valid(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i], len, k;
    uint32_t cp;
    if (c < 0x80) { i++; continue; }
    if (c >= 0xc2 && c <= 0xdf) len = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef) len = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, cp = c & 0x07;
    else return 0;
    if (len > n - i) return 0;
    for (k = 1; k < len; k++) {
      if ((s[i + k] & 0xc0) != 0x80) return 0;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
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

#endif
