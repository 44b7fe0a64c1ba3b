/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_packed_cache.c — a connection's cache of unpacked records
** (codec/packed_cache.h): hits only for the very same packed bytes and a
** base that passes unpacking's checks, least recently used out first,
** records too large for it not kept, shared blocks freed by the last
** reference, and allocation failures that only mean nothing is kept.
*/
#include <stdlib.h>

#include "codec/packed.h"
#include "codec/packed_cache.h"
#include "unit.h"

/* A packed BLOB (against base when given) of a record of n float32 items
** starting at `start`; the record in rec. */
static void packed_of(buf_t *packed, buf_t *rec, buf_t *base, float start, uint64_t n, int with_base) {
  int64_t shape[1];
  float *v = malloc(n * sizeof(float));
  record_item_spec spec;
  char name[DT_NAME_MAX];
  buf_t npy;
  packed_options o;
  codec_err err;
  uint64_t i;
  for (i = 0; i < n; i++) v[i] = start + (float)i;
  shape[0] = (int64_t)n;
  buf_init(&npy, UINT64_MAX);
  npy_write(&npy, dt_native(DT_FLOAT32), 1, shape, v, n * sizeof(float));
  memset(&spec, 0, sizeof(spec));
  dt_name(dt_native(DT_FLOAT32), name);
  spec.key.p = (const unsigned char *)"w";
  spec.key.n = 1;
  spec.dtype.p = (const unsigned char *)name;
  spec.dtype.n = strlen(name);
  spec.stype.p = (const unsigned char *)RECORD_STYPE_NUMPY;
  spec.stype.n = strlen(RECORD_STYPE_NUMPY);
  spec.ndim = 1;
  spec.shape = shape;
  spec.data.p = npy.p;
  spec.data.n = npy.n;
  record_write_item(rec, &spec);
  packed_options_init(&o);
  packed_encode(packed, PACKED_RECORD, rec->p, rec->n, with_base ? base->p : NULL, with_base ? base->n : 0, &o, &err);
  buf_free(&npy);
  free(v);
}

TEST(packed_cache_hits_only_the_same_bytes_and_a_good_base) {
  buf_t base, based, rec, other, rec2, alone, rec3;
  packed_cache *c = packed_cache_new();
  unsigned char *r, *got;
  uint64_t size;
  CHECK(c != NULL);
  buf_init(&base, UINT64_MAX);
  buf_init(&based, UINT64_MAX);
  buf_init(&rec, UINT64_MAX);
  buf_init(&other, UINT64_MAX);
  buf_init(&rec2, UINT64_MAX);
  buf_init(&alone, UINT64_MAX);
  buf_init(&rec3, UINT64_MAX);
  packed_of(&based, &base, NULL, 0, 1000, 0); /* base: the record 0, 1, 2, ... */
  based.n = 0;
  packed_of(&based, &rec, &base, 1, 1000, 1); /* against it */
  packed_of(&alone, &rec3, NULL, 5, 10, 0);   /* without a base */
  CHECK((r = shared_alloc(rec.n)) != NULL);
  memcpy(r, rec.p, rec.n);
  CHECK(packed_cache_get(c, based.p, based.n, base.p, base.n, &size) == NULL);
  packed_cache_put(c, based.p, based.n, r, rec.n);
  got = packed_cache_get(c, based.p, based.n, base.p, base.n, &size);
  CHECK(got == r && size == rec.n);
  shared_release(got);
  /* no base, another base of the same size, other bytes: misses */
  CHECK(packed_cache_get(c, based.p, based.n, NULL, 0, &size) == NULL);
  buf_append(&other, base.p, base.n);
  other.p[other.n - 1] ^= 1;
  CHECK(packed_cache_get(c, based.p, based.n, other.p, other.n, &size) == NULL);
  based.p[based.n - 1] ^= 1;
  CHECK(packed_cache_get(c, based.p, based.n, base.p, base.n, &size) == NULL);
  based.p[based.n - 1] ^= 1;
  /* packed without a base: any base, or none, hits */
  CHECK((got = shared_alloc(rec3.n)) != NULL);
  packed_cache_put(c, alone.p, alone.n, got, rec3.n);
  shared_release(got); /* the cache's reference keeps it */
  got = packed_cache_get(c, alone.p, alone.n, other.p, other.n, &size);
  CHECK(got != NULL && size == rec3.n);
  shared_release(got);
  shared_release(r);
  packed_cache_free(c);
  buf_free(&base);
  buf_free(&based);
  buf_free(&rec);
  buf_free(&other);
  buf_free(&rec2);
  buf_free(&alone);
  buf_free(&rec3);
}

TEST(packed_cache_keeps_the_most_recent_within_its_budget) {
  enum { N = PACKED_CACHE_ENTRIES + 1 }; /* one more than it keeps */
  buf_t p[N], rec[N];
  packed_cache *c = packed_cache_new();
  unsigned char *r;
  uint64_t size;
  int i;
  CHECK(c != NULL);
  for (i = 0; i < N; i++) {
    buf_init(&p[i], UINT64_MAX);
    buf_init(&rec[i], UINT64_MAX);
    packed_of(&p[i], &rec[i], NULL, (float)i * 100, 50, 0);
    CHECK((r = shared_alloc(rec[i].n)) != NULL);
    packed_cache_put(c, p[i].p, p[i].n, r, rec[i].n);
    shared_release(r);
    if (i == 1) { /* touch the first: the second becomes the least recently used */
      CHECK((r = packed_cache_get(c, p[0].p, p[0].n, NULL, 0, &size)) != NULL);
      shared_release(r);
    }
  }
  CHECK((r = packed_cache_get(c, p[0].p, p[0].n, NULL, 0, &size)) != NULL);
  shared_release(r);
  CHECK(packed_cache_get(c, p[1].p, p[1].n, NULL, 0, &size) == NULL);
  for (i = 2; i < N; i++) {
    CHECK((r = packed_cache_get(c, p[i].p, p[i].n, NULL, 0, &size)) != NULL);
    shared_release(r);
  }
  /* larger than the whole budget: not kept, nothing else dropped */
  CHECK((r = shared_alloc(8)) != NULL);
  packed_cache_put(c, p[1].p, p[1].n, r, PACKED_CACHE_BYTES);
  CHECK(packed_cache_get(c, p[1].p, p[1].n, NULL, 0, &size) == NULL);
  shared_release(r);
  CHECK((r = packed_cache_get(c, p[N - 1].p, p[N - 1].n, NULL, 0, &size)) != NULL);
  shared_release(r);
  packed_cache_free(c);
  for (i = 0; i < N; i++) {
    buf_free(&p[i]);
    buf_free(&rec[i]);
  }
}

TEST(packed_cache_allocation_failures_keep_nothing) {
  buf_t p, rec;
  packed_cache *c;
  unsigned char *r;
  uint64_t size;
  buf_init(&p, UINT64_MAX);
  buf_init(&rec, UINT64_MAX);
  packed_of(&p, &rec, NULL, 1, 20, 0);
  unit_fail_alloc_once(0);
  c = packed_cache_new();
  unit_fail_alloc_once(0);
  r = shared_alloc(4);
  unit_fail_alloc_after(-1);
  CHECK(c == NULL && r == NULL);
  CHECK((c = packed_cache_new()) != NULL && (r = shared_alloc(rec.n)) != NULL);
  unit_fail_alloc_once(0); /* the key's copy */
  packed_cache_put(c, p.p, p.n, r, rec.n);
  unit_fail_alloc_after(-1);
  CHECK(packed_cache_get(c, p.p, p.n, NULL, 0, &size) == NULL);
  shared_release(r);
  packed_cache_free(c);
  buf_free(&p);
  buf_free(&rec);
}
