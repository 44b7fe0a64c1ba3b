/* SPDX-License-Identifier: Apache-2.0 */
/*
** pack.c — packing and unpacking speed in C alone (src/codec/packed.h), on
** one core, for `make bench` (bench/packing.py): a record packed against its
** base and on its own, and unpacked into memory already mapped (the same
** buffer every time) and into fresh memory (a new malloc each time: the
** kernel maps its pages as they are first written). Beside them, memcpy of
** the record into mapped memory, the floor of any copy. Best of RUNS (7).
** Unpacking shares a record's chunks among the pool's threads
** (math/pool.h); decode_warm_threads is the same as decode_warm with the
** pool's default threads (this machine's cores, at most 4), the rest run on
** one thread.
**
** Usage: bench_pack BASE.pb REC.pb [RUNS]
** Prints "name value" lines: MB/s (10^6 bytes of the record per second) for
** encode_base, encode_alone, decode_warm, decode_fresh, decode_alone_warm,
** memcpy_warm; the packed sizes' ratios ratio_base and ratio_alone.
*/
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <malloc.h>             /* malloc_usable_size (glibc; the bench runs on Linux) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/packed.h"
#include "math/pool.h"

/* The codecs' allocator hooks, on malloc (the extension maps them to SQLite's). */
void *codec_malloc(uint64_t n) { return malloc((size_t)n); }
void *codec_realloc(void *p, uint64_t n) { return realloc(p, (size_t)n); }
void codec_free(void *p) { free(p); }
uint64_t codec_msize(const void *p) { return p ? (uint64_t)malloc_usable_size((void *)p) : 0; }

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static unsigned char *slurp(const char *path, uint64_t *n) {
  FILE *f = fopen(path, "rb");
  unsigned char *p;
  long len;
  if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) exit(2);
  p = malloc(len ? (size_t)len : 1);
  if (!p || (len && fread(p, 1, (size_t)len, f) != (size_t)len)) exit(2);
  fclose(f);
  *n = (uint64_t)len;
  return p;
}

static void fail(const char *what, const codec_err *err) {
  fprintf(stderr, "bench_pack: %s: %s\n", what, err->msg);
  exit(1);
}

/* Best time of `runs` packings; the packed BLOB stays in out. */
static double encode(buf_t *out, const unsigned char *rec, uint64_t n, const unsigned char *base, uint64_t base_n,
                     int runs) {
  packed_options o;
  codec_err err;
  double best = 1e30;
  int r;
  packed_options_init(&o);
  for (r = 0; r < runs; r++) {
    double t;
    out->n = 0;
    t = now();
    if (packed_encode(out, PACKED_RECORD, rec, n, base, base_n, &o, &err) != CODEC_OK) fail("pack", &err);
    t = now() - t;
    if (t < best) best = t;
  }
  return best;
}

/* Best time of `runs` unpackings into dst (NULL: a fresh malloc each time). */
static double decode(const buf_t *packed, const unsigned char *base, uint64_t base_n, unsigned char *dst,
                     const unsigned char *want, int runs) {
  packed_view v;
  codec_err err;
  double best = 1e30;
  int r;
  packed_view_init(&v);
  if (packed_open(&v, packed->p, packed->n, UINT64_MAX, &err) != CODEC_OK) fail("open", &err);
  for (r = 0; r < runs; r++) {
    unsigned char *d = dst ? dst : malloc((size_t)v.h.size);
    double t = now();
    if (!d || packed_decode_into(&v, base, base_n, d, &err) != CODEC_OK) fail("unpack", &err);
    t = now() - t;
    if (t < best) best = t;
    if (memcmp(d, want, (size_t)v.h.size) != 0) {
      fprintf(stderr, "bench_pack: unpacked bytes differ\n");
      exit(1);
    }
    if (!dst) free(d);
  }
  packed_view_clear(&v);
  return best;
}

int main(int argc, char **argv) {
  uint64_t base_n, n;
  unsigned char *base, *rec, *dst;
  buf_t based, alone;
  double mb, t;
  int runs = argc > 3 ? atoi(argv[3]) : 7, r;
  if (argc < 3 || runs < 1) {
    fprintf(stderr, "usage: bench_pack BASE.pb REC.pb [RUNS]\n");
    return 2;
  }
  base = slurp(argv[1], &base_n);
  rec = slurp(argv[2], &n);
  mb = (double)n / 1e6;
  dst = malloc((size_t)n);
  if (!dst) return 2;
  memset(dst, 0, (size_t)n); /* mapped */
  buf_init(&based, UINT64_MAX);
  buf_init(&alone, UINT64_MAX);
  {
    int threads = pool_configure(1, 0); /* one core; the pool's default put back for the threads' figure */
    printf("encode_base %.1f\n", mb / encode(&based, rec, n, base, base_n, runs));
    printf("encode_alone %.1f\n", mb / encode(&alone, rec, n, NULL, 0, runs));
    printf("decode_warm %.1f\n", mb / decode(&based, base, base_n, dst, rec, runs));
    printf("decode_fresh %.1f\n", mb / decode(&based, base, base_n, NULL, rec, runs));
    printf("decode_alone_warm %.1f\n", mb / decode(&alone, NULL, 0, dst, rec, runs));
    pool_configure(threads, 0);
    printf("decode_warm_threads %.1f\n", mb / decode(&based, base, base_n, dst, rec, runs));
    printf("threads %d\n", pool_threads());
  }
  for (r = 0, t = 1e30; r < runs; r++) {
    double s = now();
    memcpy(dst, rec, (size_t)n);
    s = now() - s;
    if (s < t) t = s;
  }
  printf("memcpy_warm %.1f\n", mb / t);
  printf("ratio_base %.4f\nratio_alone %.4f\n", (double)based.n / (double)n, (double)alone.n / (double)n);
  buf_free(&based);
  buf_free(&alone);
  free(base);
  free(rec);
  free(dst);
  return 0;
}
