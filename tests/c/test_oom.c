/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_oom.c — out-of-memory behaviour of the codecs: each parse/build path
** runs with the Nth allocation failing, for N = 0, 1, 2, ... until a run
** needs no more than N allocations. Every run must end in success or
** CODEC_NOMEM, and leave no allocation behind.
*/
#include <stdlib.h>

#include "codec/json.h"
#include "codec/keyset.h"
#include "codec/npy.h"
#include "codec/record.h"
#include "unit.h"

/* Run `fn` under every allocation-failure point; returns how many points. */
static int oom_loop(int (*fn)(void)) {
  long n;
  for (n = 0; n < 100000; n++) {
    long before = unit_live_allocs();
    int rc, injected;
    unit_fail_alloc_after(n);
    rc = fn();
    injected = unit_alloc_failed();
    unit_fail_alloc_after(-1);
    if (unit_live_allocs() != before) {
      printf("  leak after failing allocation %ld\n", n);
      return -1;
    }
    if (!injected) return rc == CODEC_OK ? (int)n : -1;
    if (rc != CODEC_NOMEM) {
      printf("  allocation %ld failed, rc %d\n", n, rc);
      return -1;
    }
  }
  return -1;
}

/* A record of 40 items: the item array grows past its inline slots and the
** duplicate-key check uses the hash set. */
static unsigned char big_record[4096];
static uint64_t big_record_len;

static void make_big_record(void) {
  buf_t b;
  int i;
  buf_init(&b, UINT64_MAX);
  for (i = 0; i < 40; i++) {
    char key[16];
    int64_t shape[2] = {1, i};
    record_item_spec spec;
    memset(&spec, 0, sizeof(spec));
    snprintf(key, sizeof(key), "layer%d.w", i);
    spec.key.p = (const unsigned char *)key;
    spec.key.n = strlen(key);
    spec.dtype.p = (const unsigned char *)"uint8";
    spec.dtype.n = 5;
    spec.ndim = 2;
    spec.shape = shape;
    record_write_item(&b, &spec);
  }
  big_record_len = b.n;
  memcpy(big_record, b.p, (size_t)b.n);
  buf_free(&b);
}

static int run_record_parse(void) {
  record_t r;
  codec_err err;
  int rc;
  record_init(&r);
  rc = record_parse(&r, big_record, big_record_len, &err);
  if (rc == CODEC_OK && r.n != 40) rc = -1;
  record_clear(&r);
  return rc;
}

static int run_record_write(void) {
  record_t r;
  codec_err err;
  buf_t out;
  int rc, i;
  record_init(&r);
  rc = record_parse(&r, big_record, big_record_len, &err);
  buf_init(&out, UINT64_MAX);
  for (i = 0; rc == CODEC_OK && i < r.n; i++) {
    record_item_spec spec;
    int64_t shape[RECORD_MAX_DIMS];
    record_item_spec_from_item(&spec, &r.items[i], shape);
    record_write_item(&out, &spec);
  }
  if (rc == CODEC_OK) rc = out.rc;
  if (rc == CODEC_OK && (out.n != big_record_len || memcmp(out.p, big_record, (size_t)out.n))) rc = -1;
  buf_free(&out);
  record_clear(&r);
  return rc;
}

static int run_json_parse(void) {
  static const char *text =
      "[[1.5, 2, \"NaN\"], [4, 5e3, -6], [7, 8, 9], [10, 11, 12], [13, 14, 15], "
      "[16, 17, 18], [19, 20, 21], [22, 23, 24], [25, 26, 27], [28, 29, 30]]";
  buf_t out;
  dt_dtype d;
  int ndim, rc;
  int64_t shape[NPY_MAX_DIMS];
  codec_err err;
  buf_init(&out, UINT64_MAX);
  rc = json_parse_array(text, strlen(text), 0, &d, &ndim, shape, &out, &err);
  if (rc == CODEC_OK && (out.n != 240 || ndim != 2)) rc = -1;
  buf_free(&out);
  return rc;
}

static int run_npy_write_and_json(void) {
  uint64_t n;
  unsigned char *f = unit_read_file("npy/layer_conv_f4.npy", &n);
  npy_array a;
  codec_err err;
  buf_t out;
  int rc;
  if (!f) return -1;
  rc = npy_parse(f, n, &a, &err);
  buf_init(&out, UINT64_MAX);
  if (rc == CODEC_OK) {
    npy_write(&out, a.dtype, a.ndim, a.shape, a.data, a.nbytes);
    rc = out.rc;
    if (rc == CODEC_OK && (out.n != n || memcmp(out.p, f, (size_t)n))) rc = -1;
  }
  if (rc == CODEC_OK) {
    out.n = 0;
    json_put_array(&out, a.data, a.dtype, a.ndim, a.shape);
    rc = out.rc;
  }
  buf_free(&out);
  free(f);
  return rc;
}

static int run_keyset(void) {
  keyset_t ks;
  int i, rc = CODEC_OK;
  keyset_init(&ks);
  for (i = 0; i < 300 && rc == CODEC_OK; i++) {
    char key[24];
    snprintf(key, sizeof(key), "key-%d", i * 7919);
    rc = keyset_put(&ks, key, strlen(key), i);
  }
  for (i = 0; i < 300 && rc == CODEC_OK; i++) {
    char key[24];
    snprintf(key, sizeof(key), "key-%d", i * 7919);
    if (keyset_get(&ks, key, strlen(key)) != i) rc = -1;
  }
  if (rc == CODEC_OK && keyset_get(&ks, "key-1", 5) != -1) rc = -1;
  keyset_free(&ks);
  return rc;
}

TEST(oom_record_parse) {
  make_big_record();
  CHECK(oom_loop(run_record_parse) >= 2); /* item array growth and the key hash set */
}

TEST(oom_record_reencode) {
  make_big_record();
  CHECK(oom_loop(run_record_write) >= 3);
}

TEST(oom_json_parse) { CHECK(oom_loop(run_json_parse) >= 1); }

TEST(oom_npy_write_and_json_output) { CHECK(oom_loop(run_npy_write_and_json) >= 2); }

TEST(oom_keyset) { CHECK(oom_loop(run_keyset) >= 4); }

TEST(buf_limit_and_growth) {
  buf_t b;
  unsigned char *p;
  uint64_t n;
  buf_init(&b, 100);
  buf_append(&b, "0123456789", 10);
  buf_printf(&b, "%s-%d", "abc", 42);
  CHECK(b.rc == CODEC_OK && b.n == 16 && memcmp(b.p, "0123456789abc-42", 16) == 0);
  /* a long printf goes through the second path */
  buf_printf(&b, "%080d", 7);
  CHECK(b.rc == CODEC_OK && b.n == 96 && b.p[95] == '7');
  /* exactly at the limit is fine, one past is TOOBIG and sticky */
  buf_append(&b, "abcd", 4);
  CHECK(b.rc == CODEC_OK && b.n == 100 && b.cap == 100);
  buf_putc(&b, 'x');
  CHECK(b.rc == CODEC_TOOBIG && b.n == 100);
  buf_puts(&b, "");
  CHECK(b.rc == CODEC_TOOBIG);
  p = buf_detach(&b, &n);
  CHECK(p != NULL && n == 100 && b.p == NULL && b.n == 0);
  codec_free(p);
  buf_free(&b);
  /* an empty buffer detaches to NULL; appending nothing allocates nothing */
  buf_init(&b, 100);
  buf_append(&b, NULL, 0);
  CHECK(b.rc == CODEC_OK && b.p == NULL);
  CHECK(buf_detach(&b, &n) == NULL && n == 0);
  /* an allocation failure is sticky too */
  unit_fail_alloc_after(0);
  buf_putc(&b, 'a');
  unit_fail_alloc_after(-1);
  CHECK(b.rc == CODEC_NOMEM && b.n == 0);
  buf_putc(&b, 'a');
  CHECK(b.rc == CODEC_NOMEM);
  buf_free(&b);
  /* a reservation beyond the limit fails before allocating */
  buf_init(&b, 1000);
  CHECK(buf_reserve(&b, UINT64_MAX) == CODEC_TOOBIG && b.p == NULL);
  buf_free(&b);
}
