/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_xxh64.c — XXH64 (codec/xxh64.h) against the specification's value
** for the empty input and against libzstd, whose frame checksum is the low
** 32 bits of XXH64 of the content (seed 0), for every length up to 600 and
** a few long ones; streaming in pieces of every size gives the one-shot
** value.
*/
#include <stdlib.h>
#include <zstd.h>

#include "codec/xxh64.h"
#include "unit.h"

static void fill(unsigned char *p, size_t n, unsigned seed) {
  size_t i;
  for (i = 0; i < n; i++) p[i] = (unsigned char)((i * 2654435761u + seed) >> 13);
}

/* The checksum zstd writes for src (a frame with a content checksum). */
static uint32_t zstd_checksum(const unsigned char *src, size_t n) {
  size_t cap = ZSTD_compressBound(n), got;
  unsigned char *out = malloc(cap);
  uint32_t v;
  ZSTD_CCtx *c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  got = ZSTD_compress2(c, out, cap, src, n);
  ZSTD_freeCCtx(c);
  v = (uint32_t)out[got - 4] | (uint32_t)out[got - 3] << 8 | (uint32_t)out[got - 2] << 16 |
      (uint32_t)out[got - 1] << 24;
  free(out);
  return v;
}

TEST(xxh64_empty_is_the_specification_value) {
  CHECK(xxh64("", 0, 0) == 0xEF46DB3751D8E999u);
  CHECK(xxh64("", 0, 1) != xxh64("", 0, 0)); /* the seed counts */
}

TEST(xxh64_low_half_is_zstd_frame_checksum) {
  static unsigned char buf[1 << 20];
  static const size_t long_ones[] = {1000, 4095, 4096, 65537, 1 << 20};
  size_t n, k;
  fill(buf, sizeof(buf), 7);
  for (n = 0; n <= 600; n++) CHECK((uint32_t)xxh64(buf, n, 0) == zstd_checksum(buf, n));
  for (k = 0; k < sizeof(long_ones) / sizeof(long_ones[0]); k++)
    CHECK((uint32_t)xxh64(buf, long_ones[k], 0) == zstd_checksum(buf, long_ones[k]));
}

TEST(xxh64_streaming_equals_one_shot) {
  static unsigned char buf[3000];
  size_t piece, n;
  fill(buf, sizeof(buf), 3);
  for (n = 0; n <= sizeof(buf); n += 97) {
    uint64_t want = xxh64(buf, n, 5);
    for (piece = 1; piece <= 70; piece++) {
      xxh64_state s;
      size_t at;
      xxh64_init(&s, 5);
      for (at = 0; at < n; at += piece) xxh64_update(&s, buf + at, n - at < piece ? n - at : piece);
      xxh64_update(&s, NULL, 0);
      CHECK(xxh64_digest(&s) == want);
    }
  }
}
