/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_buf.c — result buffers (buf_init_result): a large one starts on a
** 2 MiB boundary, keeps its bytes through growth, and its detached bytes are
** freed by buf_release; small ones and failures behave as plain buffers.
*/
#include <stdlib.h>

#include "codec/buf.h"
#include "unit.h"

#define MIB ((uint64_t)1 << 20)

static int aligned_2mib(const void *p) { return ((uintptr_t)p & (uintptr_t)(2 * MIB - 1)) == 0; }

TEST(buf_result_large_is_placed_on_2mib) {
  buf_t b;
  unsigned char *p;
  uint64_t i, n;
  buf_init_result(&b, UINT64_MAX);
  CHECK(buf_reserve(&b, BUF_PLACE_MIN) == CODEC_OK);
  CHECK(b.cap == BUF_PLACE_MIN && aligned_2mib(b.p));
  p = buf_extend(&b, BUF_PLACE_MIN);
  CHECK(p == b.p);
  for (i = 0; i < BUF_PLACE_MIN; i += 4096) p[i] = (unsigned char)(i >> 12);
  /* growth keeps the bytes (and the block's header) */
  buf_append(&b, "tail", 4);
  CHECK(b.rc == CODEC_OK && b.n == BUF_PLACE_MIN + 4 && memcmp(b.p + BUF_PLACE_MIN, "tail", 4) == 0);
  for (i = 0; i < BUF_PLACE_MIN; i += 4096) CHECK(b.p[i] == (unsigned char)(i >> 12));
  p = buf_detach(&b, &n);
  CHECK(p && n == BUF_PLACE_MIN + 4 && !b.p);
  buf_release(p);
  buf_release(NULL);
  CHECK(unit_live_allocs() == 0);
}

TEST(buf_result_small_grows_and_frees) {
  buf_t b;
  int i;
  buf_init_result(&b, UINT64_MAX);
  for (i = 0; i < 1000; i++) buf_printf(&b, "%d,", i);
  CHECK(b.rc == CODEC_OK && memcmp(b.p, "0,1,2,", 6) == 0 && b.p[b.n - 1] == ',');
  buf_free(&b);
  CHECK(unit_live_allocs() == 0);
  buf_init_result(&b, 10);
  CHECK(buf_reserve(&b, 11) == CODEC_TOOBIG);
  buf_free(&b);
  buf_init_result(&b, UINT64_MAX);
  unit_fail_alloc_after(0);
  CHECK(buf_reserve(&b, 3 * BUF_PLACE_MIN) == CODEC_NOMEM);
  unit_fail_alloc_after(-1);
  buf_free(&b);
  CHECK(unit_live_allocs() == 0);
}
