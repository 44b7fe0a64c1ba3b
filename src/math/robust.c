/* SPDX-License-Identifier: Apache-2.0 */
/*
** robust.c — Krum/MultiKrum scores, FedAvg in Flower's own arithmetic,
** Bulyan's per-coordinate rule, and a portable Gaussian generator (see
** robust.h). Built like kernels.c: -O3 -ffp-contract=off, so no FMA
** contraction changes a result bit from one CPU to another.
*/
#include "math/robust.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "math/kernels.h"
#include "math/pool.h"

/* The hot loops get an AVX2 clone where kernels.c has them (KN_HOT: same
** operations, same order, the same bits); Krum's pairs and Bulyan's
** coordinates get AVX2 and AVX-512 copies of their own, picked by
** __builtin_cpu_supports (each with its own vector width and tile size). */

/* --- Krum ------------------------------------------------------------------ */

/* A pair's squared distance over a block of m elements: lane l (0..7) sums
** (a[k] - b[k])^2 over k = l mod 8 in ascending k, for k below m rounded
** down to a multiple of 8; the rest go one by one into s; then
** ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)) + s is added to the
** pair's running distance. That order is fixed: every path below (AVX-512,
** AVX2, portable) computes it, however many pairs share a load and however
** many threads share the pairs, so the bits never depend on the CPU.
**
** Rows are taken in tiles: T consecutive rows against T others (T = 4 with
** AVX-512's 32 registers, 2 otherwise), so each load of 8 doubles feeds T
** pairs instead of one. The 8 lanes are NV native vectors of a GCC/Clang
** vector type: one zmm, two ymm or four xmm registers. */
typedef double rb_v8 __attribute__((vector_size(64)));
typedef double rb_v8u __attribute__((vector_size(64), aligned(8), may_alias));
typedef int64_t rb_l8 __attribute__((vector_size(64)));
typedef double rb_v4 __attribute__((vector_size(32)));
typedef double rb_v4u __attribute__((vector_size(32), aligned(8), may_alias));
typedef double rb_v2 __attribute__((vector_size(16)));
typedef double rb_v2u __attribute__((vector_size(16), aligned(8), may_alias));
#define RB_LD8(p) (*(const rb_v8u *)(const void *)(p))
#define RB_TMAX 4
#define RB_INLINE static inline __attribute__((always_inline))

/* TILE(cols, stride, m, i0, ni, j0, nj, n, dist): rows i0..i0+ni against
** rows j0..j0+nj (i < j for every pair), ni and nj constants where it is
** inlined; VT holds 8 / NV lanes. */
#define RB_TILE_FN(TILE, VT, VTU, NV)                                                                              \
  RB_INLINE void TILE(const double *cols, size_t stride, size_t m, size_t i0, int ni, size_t j0, int nj, size_t n, \
                      double *dist) {                                                                              \
    VT acc[RB_TMAX][RB_TMAX][NV];                                                                                  \
    size_t k = 0, kk;                                                                                              \
    int x, y, v;                                                                                                   \
    memset(acc, 0, sizeof acc);                                                                                    \
    for (; k + 8 <= m; k += 8) {                                                                                   \
      VT a[RB_TMAX][NV];                                                                                           \
      for (x = 0; x < ni; x++)                                                                                     \
        for (v = 0; v < NV; v++)                                                                                   \
          a[x][v] = *(const VTU *)(const void *)(cols + (i0 + (size_t)x) * stride + k + (size_t)v * (8 / NV));     \
      for (y = 0; y < nj; y++)                                                                                     \
        for (v = 0; v < NV; v++) {                                                                                 \
          VT b = *(const VTU *)(const void *)(cols + (j0 + (size_t)y) * stride + k + (size_t)v * (8 / NV));        \
          for (x = 0; x < ni; x++) {                                                                               \
            VT d = a[x][v] - b;                                                                                    \
            acc[x][y][v] += d * d;                                                                                 \
          }                                                                                                        \
        }                                                                                                          \
    }                                                                                                              \
    for (x = 0; x < ni; x++)                                                                                       \
      for (y = 0; y < nj; y++) {                                                                                   \
        const double *p = cols + (i0 + (size_t)x) * stride, *q = cols + (j0 + (size_t)y) * stride;                 \
        double s = 0, l[8];                                                                                        \
        for (kk = k; kk < m; kk++) {                                                                               \
          double d = p[kk] - q[kk];                                                                                \
          s += d * d;                                                                                              \
        }                                                                                                          \
        memcpy(l, acc[x][y], sizeof l);                                                                            \
        dist[(i0 + (size_t)x) * n + j0 + (size_t)y] +=                                                             \
            ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7])) + s;                                 \
      }                                                                                                            \
  }

#define RB_CASE(TILE, a, b) \
  case (a)*8 + (b): TILE(cols, stride, m, i0, a, j0, b, n, dist); break

/* TILES(cols, n, stride, m, dist, tiles, nt): tiles (g, h) of T rows each,
** g <= h, at tiles[2 t], tiles[2 t + 1]; a tile on the diagonal is its
** rows' pairs among themselves. */
#define RB_TILES_FN(ATTR, TILES, TILE, T)                                                                            \
  ATTR static void TILES(const double *cols, size_t n, size_t stride, size_t m, double *dist, const uint32_t *tiles, \
                         size_t nt) {                                                                                \
    size_t t;                                                                                                        \
    for (t = 0; t < nt; t++) {                                                                                       \
      size_t i0 = (size_t)tiles[2 * t] * (T), j0 = (size_t)tiles[2 * t + 1] * (T), x;                                \
      int ni = n - i0 < (T) ? (int)(n - i0) : (T), nj = n - j0 < (T) ? (int)(n - j0) : (T);                          \
      if (i0 == j0) {                                                                                                \
        for (x = 0; x + 1 < (size_t)ni; x++) {                                                                       \
          size_t a = i0 + x, b = a + 1;                                                                              \
          switch (ni - (int)x - 1) { /* row a against the rows after it in the tile */                               \
            case 1: TILE(cols, stride, m, a, 1, b, 1, n, dist); break;                                               \
            case 2: TILE(cols, stride, m, a, 1, b, 2, n, dist); break;                                               \
            default: TILE(cols, stride, m, a, 1, b, 3, n, dist); break;                                              \
          }                                                                                                          \
        }                                                                                                            \
        continue;                                                                                                    \
      }                                                                                                              \
      if ((T) == 2) {                                                                                                \
        switch (ni * 8 + nj) {                                                                                       \
          RB_CASE(TILE, 1, 1);                                                                                       \
          RB_CASE(TILE, 1, 2);                                                                                       \
          RB_CASE(TILE, 2, 1);                                                                                       \
          default: TILE(cols, stride, m, i0, 2, j0, 2, n, dist); break;                                              \
        }                                                                                                            \
        continue;                                                                                                    \
      }                                                                                                              \
      switch (ni * 8 + nj) {                                                                                         \
        RB_CASE(TILE, 1, 1);                                                                                         \
        RB_CASE(TILE, 1, 2);                                                                                         \
        RB_CASE(TILE, 1, 3);                                                                                         \
        RB_CASE(TILE, 1, 4);                                                                                         \
        RB_CASE(TILE, 2, 1);                                                                                         \
        RB_CASE(TILE, 2, 2);                                                                                         \
        RB_CASE(TILE, 2, 3);                                                                                         \
        RB_CASE(TILE, 2, 4);                                                                                         \
        RB_CASE(TILE, 3, 1);                                                                                         \
        RB_CASE(TILE, 3, 2);                                                                                         \
        RB_CASE(TILE, 3, 3);                                                                                         \
        RB_CASE(TILE, 3, 4);                                                                                         \
        RB_CASE(TILE, 4, 1);                                                                                         \
        RB_CASE(TILE, 4, 2);                                                                                         \
        RB_CASE(TILE, 4, 3);                                                                                         \
        default: TILE(cols, stride, m, i0, 4, j0, 4, n, dist); break;                                                \
      }                                                                                                              \
    }                                                                                                                \
  }

RB_TILE_FN(tile_v2, rb_v2, rb_v2u, 4)
RB_TILES_FN(, tiles_base, tile_v2, 2)
#if KN_CLONES
RB_TILE_FN(tile_v4, rb_v4, rb_v4u, 2)
RB_TILE_FN(tile_v8, rb_v8, rb_v8u, 1)
RB_TILES_FN(__attribute__((target("avx2"))), tiles_avx2, tile_v4, 2)
RB_TILES_FN(__attribute__((target("avx512f"))), tiles_avx512, tile_v8, 4)
#endif

int rb_set_isa(int isa) { return kn_set_isa(isa); }

static int isa_now(void) { return kn_isa(); }

static int tile_side(int isa) { return isa == RB_ISA_AVX512 ? 4 : 2; }

static void run_tiles(int isa, const double *cols, size_t n, size_t stride, size_t m, double *dist,
                      const uint32_t *tiles, size_t nt) {
#if KN_CLONES
  if (isa == RB_ISA_AVX512) {
    tiles_avx512(cols, n, stride, m, dist, tiles, nt);
    return;
  }
  if (isa == RB_ISA_AVX2) {
    tiles_avx2(cols, n, stride, m, dist, tiles, nt);
    return;
  }
#endif
  (void)isa;
  tiles_base(cols, n, stride, m, dist, tiles, nt);
}

/* Every tile (g, h), g <= h, of n rows in tiles of T: the count. With
** `tiles`, also the list, row by row of tiles. */
static size_t tile_list(size_t n, int T, uint32_t *tiles) {
  size_t groups = (n + (size_t)T - 1) / (size_t)T, g, h, c = 0;
  for (g = 0; g < groups; g++)
    for (h = g; h < groups; h++, c++)
      if (tiles) {
        tiles[2 * c] = (uint32_t)g;
        tiles[2 * c + 1] = (uint32_t)h;
      }
  return c;
}

int rb_pair_sqdist(const double *cols, size_t n, size_t stride, size_t m, double *dist) {
  int isa = isa_now();
  size_t nt = tile_list(n, tile_side(isa), NULL);
  uint32_t *tiles = codec_malloc((uint64_t)nt * 2 * sizeof(uint32_t) + 1);
  if (!tiles) return CODEC_NOMEM;
  tile_list(n, tile_side(isa), tiles);
  run_tiles(isa, cols, n, stride, m, dist, tiles, nt);
  codec_free(tiles);
  return CODEC_OK;
}

/* rb_sqdist_rows goes through the blocks (segment by segment, `block`
** elements at a time) in waves of up to `slices` x `per_slice` blocks, few
** and long: the pool starts one part per thread, and each part claims the
** wave's blocks one at a time (rb_claim), so a thread the system has
** descheduled holds up the others by one block at most. For each block
** a thread converts every row's elements to double once, into its own buffer
** (rows 64-byte aligned, a cache line more than a multiple of 4 KiB apart so
** that they do not share cache sets), and computes every pair's block sum
** into that block's slot (a zeroed n x n matrix, so the slot holds the sum
** itself). Then the caller adds the slots to dist in block order: each
** pair's distance is summed in the one-thread order, whatever the threads.
** Each row is read from memory once. */
/* The next index of a shared counter (the pool's parts claim work by it:
** RB_CLAIM blocks at a time, so that a thread reads each row in runs the
** hardware prefetcher follows). */
#define RB_CLAIM 16
static size_t rb_claim(size_t *next) { return __atomic_fetch_add(next, 1, __ATOMIC_RELAXED); }

typedef struct sq_block {
  const rb_seg *seg;
  uint64_t e;
  size_t m;
} sq_block;

typedef struct sq_job {
  const unsigned char *const *rows;
  size_t n, stride, nt, slices, per_slice, nblocks;
  size_t next; /* the wave's next block to claim */
  const uint32_t *tiles;
  double **bufs;
  double *slots;  /* slices * per_slice matrices of n x n */
  sq_block *wave; /* this wave's blocks */
  uint64_t unit;  /* pair-elements of one slice: the pool's measure of work */
  int isa;
} sq_job;

static void sq_part(void *ctx, uint64_t begin, uint64_t end, unsigned char *scratch) {
  sq_job *j = ctx;
  size_t b, r, nn = j->n * j->n;
  double *buf = j->bufs[begin / j->unit];
  (void)end;
  (void)scratch;
  size_t c;
  while ((c = rb_claim(&j->next) * RB_CLAIM) < j->nblocks) /* RB_CLAIM blocks in a row: each row read in a run */
    for (b = c; b < c + RB_CLAIM && b < j->nblocks; b++) {
      const sq_block *k = &j->wave[b];
      size_t size = dt_size(k->seg->type);
      double *slot = j->slots + b * nn;
      for (r = 0; r < j->n; r++)
        kn_to_f64(k->seg->type, j->rows[r] + k->seg->at + k->e * size, buf + r * j->stride, k->m);
      memset(slot, 0, nn * sizeof(double));
      run_tiles(j->isa, buf, j->n, j->stride, k->m, slot, j->tiles, j->nt);
    }
}

int rb_sqdist_rows(const unsigned char *const *rows, size_t n, const rb_seg *segs, size_t nsegs, size_t block,
                   double *dist) {
  sq_job j;
  uint64_t pairs = (uint64_t)n * (n ? n - 1 : 0) / 2, e;
  size_t s, nn = n * n, b, p, q, bytes;
  double **raw = NULL;
  int rc = CODEC_OK;
  if (n < 2 || !block) return CODEC_OK;
  memset(&j, 0, sizeof j);
  j.rows = rows;
  j.n = n;
  j.stride = (block + 7) / 8 * 8;
  if (j.stride % 512 == 0) j.stride += 8;
  j.isa = isa_now();
  j.nt = tile_list(n, tile_side(j.isa), NULL);
  j.slices = (size_t)pool_threads();
  if (j.slices < 1) j.slices = 1;
  /* Up to 64 blocks a slice, with the slots of a wave within 8 MiB. */
  j.per_slice = ((size_t)8 << 20) / (j.slices * nn * sizeof(double));
  if (j.per_slice > 1024) j.per_slice = 1024;
  if (j.per_slice < 1) j.per_slice = 1;
  if (size_mul(pairs, block, &j.unit) || size_mul(j.unit, j.per_slice, &j.unit) || j.unit > UINT64_MAX / 64)
    j.unit = UINT64_MAX / 64;
  bytes = j.n * j.stride * sizeof(double) + 64;
  j.tiles = codec_malloc((uint64_t)j.nt * 2 * sizeof(uint32_t));
  j.bufs = codec_malloc((uint64_t)j.slices * sizeof(double *));
  if ((raw = codec_malloc((uint64_t)j.slices * sizeof(double *))) != NULL) memset(raw, 0, j.slices * sizeof(double *));
  j.slots = codec_malloc((uint64_t)j.slices * j.per_slice * nn * sizeof(double));
  j.wave = codec_malloc((uint64_t)j.slices * j.per_slice * sizeof(sq_block));
  if (!j.tiles || !j.bufs || !raw || !j.slots || !j.wave) {
    rc = CODEC_NOMEM;
    goto done;
  }
  tile_list(n, tile_side(j.isa), (uint32_t *)(void *)j.tiles);
  for (s = 0; s < j.slices; s++) {
    if (!(raw[s] = codec_malloc(bytes))) {
      rc = CODEC_NOMEM;
      goto done;
    }
    j.bufs[s] = (double *)(void *)((unsigned char *)raw[s] + (64 - (uintptr_t)raw[s] % 64) % 64);
  }
  s = 0;
  e = 0;
  while (s < nsegs) { /* one wave */
    for (j.nblocks = 0; j.nblocks < j.slices * j.per_slice && s < nsegs;) {
      if (e >= segs[s].numel) {
        s++;
        e = 0;
        continue;
      }
      j.wave[j.nblocks].seg = &segs[s];
      j.wave[j.nblocks].e = e;
      j.wave[j.nblocks].m = segs[s].numel - e < block ? (size_t)(segs[s].numel - e) : block;
      e += j.wave[j.nblocks++].m;
    }
    if (!j.nblocks) break;
    /* Slices past the wave's blocks are empty: the pool is told of those
    ** that have blocks only. */
    j.next = 0;
    pool_run(j.unit * ((j.nblocks + j.per_slice - 1) / j.per_slice), j.unit, sq_part, &j, NULL);
    for (b = 0; b < j.nblocks; b++)
      for (p = 0; p < n; p++)
        for (q = p + 1; q < n; q++) dist[p * n + q] += j.slots[b * nn + p * n + q];
  }
done:
  if (raw)
    for (s = 0; s < j.slices; s++) codec_free(raw[s]);
  codec_free(raw);
  codec_free(j.bufs);
  codec_free((void *)j.tiles);
  codec_free(j.slots);
  codec_free(j.wave);
  return rc;
}

/* Ascending, NaN last (np.sort's order). */
static int cmp_nan_last(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  if (isnan(a)) return isnan(b) ? 0 : 1;
  if (isnan(b)) return -1;
  return a < b ? -1 : a > b;
}

void rb_krum_scores(const double *dist, size_t n, size_t f, double *scores, double *tmp) {
  /* Flower: num_closest = max(1, n - f - 2), argsort(distances)[1:num_closest + 1]
  ** (position 0 being the row itself, at distance 0). */
  size_t closest = n > f + 3 ? n - f - 2 : 1, i, j, c;
  if (closest > n - 1) closest = n - 1;
  for (i = 0; i < n; i++) {
    double s = 0;
    for (j = 0, c = 0; j < n; j++)
      if (j != i) tmp[c++] = i < j ? dist[i * n + j] : dist[j * n + i];
    qsort(tmp, c, sizeof(double), cmp_nan_last);
    for (j = 0; j < closest; j++) s += tmp[j];
    scores[i] = s;
  }
}

void rb_argsort(const double *v, size_t n, size_t *order) {
  size_t i, j;
  /* Insertion sort: stable, and rounds have tens to thousands of rows. */
  for (i = 0; i < n; i++) {
    size_t x = i;
    for (j = i; j > 0 && cmp_nan_last(&v[order[j - 1]], &v[x]) > 0; j--) order[j] = order[j - 1];
    order[j] = x;
  }
}

/* --- FedAvg in Flower's arithmetic ------------------------------------------ */

dt_type rb_fedavg_type(dt_type t) {
  char k = dt_kind(t);
  return k == DT_KIND_FLOAT || k == DT_KIND_COMPLEX ? t : DT_FLOAT64;
}

KN_HOT static void axpy_f32(const void *x, float w, void *acc, size_t m, int first) {
  const unsigned char *px = x;
  unsigned char *pa = acc;
  size_t i;
  for (i = 0; i < m; i++) {
    float v, a;
    memcpy(&v, px + 4 * i, 4);
    v = v * w;
    if (!first) {
      memcpy(&a, pa + 4 * i, 4);
      v = a + v;
    }
    memcpy(pa + 4 * i, &v, 4);
  }
}

KN_HOT static void axpy_f64(const void *x, double w, void *acc, size_t m, int first) {
  const unsigned char *px = x;
  unsigned char *pa = acc;
  size_t i;
  for (i = 0; i < m; i++) {
    double v, a;
    memcpy(&v, px + 8 * i, 8);
    v = v * w;
    if (!first) {
      memcpy(&a, pa + 8 * i, 8);
      v = a + v;
    }
    memcpy(pa + 8 * i, &v, 8);
  }
}

/* Pairs of (re, im): acc = first ? p : acc + p, in float or double. */
static void add_pairs(const double *p, void *acc, size_t m, int first, int single) {
  unsigned char *pa = acc;
  size_t i;
  if (single) {
    const float *q = (const float *)(const void *)p;
    for (i = 0; i < 2 * m; i++) {
      float a, v = q[i];
      if (!first) {
        memcpy(&a, pa + 4 * i, 4);
        v = a + v;
      }
      memcpy(pa + 4 * i, &v, 4);
    }
    return;
  }
  for (i = 0; i < 2 * m; i++) {
    double a, v = p[i];
    if (!first) {
      memcpy(&a, pa + 8 * i, 8);
      v = a + v;
    }
    memcpy(pa + 8 * i, &v, 8);
  }
}

void rb_fedavg_step(dt_type t, const void *x, double w, void *acc, size_t m, int first, double *tmp) {
  size_t i;
  switch (t) {
    case DT_FLOAT32: axpy_f32(x, (float)w, acc, m, first); return;
    case DT_FLOAT64: axpy_f64(x, w, acc, m, first); return;
    case DT_FLOAT16: {
      /* NumPy's half arithmetic: each operation in float, rounded to half. */
      float *f = (float *)(void *)tmp, wh = (float)dt_half_to_double(dt_double_to_half(w));
      unsigned char *pa = acc;
      kn_to_f32(DT_FLOAT16, x, f, m);
      for (i = 0; i < m; i++) {
        uint16_t h = dt_double_to_half((double)(f[i] * wh));
        if (!first) {
          uint16_t a;
          memcpy(&a, pa + 2 * i, 2);
          h = dt_double_to_half((double)((float)dt_half_to_double(a) + (float)dt_half_to_double(h)));
        }
        memcpy(pa + 2 * i, &h, 2);
      }
      return;
    }
    case DT_COMPLEX64: /* x * complex(w, 0) by the full formula, as NumPy */
      kn_scale_c64(x, (float)w, tmp, m);
      add_pairs(tmp, acc, m, first, 1);
      return;
    case DT_COMPLEX128:
      kn_scale_c128(x, w, tmp, m);
      add_pairs(tmp, acc, m, first, 0);
      return;
    default: /* bool and integers: float64 products */
      kn_to_f64(t, x, tmp, m);
      axpy_f64(tmp, w, acc, m, first);
      return;
  }
}

/* --- Bulyan -------------------------------------------------------------- */

static double round_to(dt_type t, double v) {
  if (t == DT_FLOAT32) return (double)(float)v;
  if (t == DT_FLOAT16) return dt_half_to_double(dt_double_to_half(v));
  return v;
}

double rb_bulyan_coord(double *v, size_t theta, size_t beta, dt_type t) {
  size_t i, j, lo, hi, h = theta / 2;
  double med, sum = 0;
  for (i = 0; i < theta; i++)
    if (isnan(v[i])) return v[i];
  for (i = 1; i < theta; i++) { /* theta is small: insertion sort */
    double x = v[i];
    for (j = i; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];
    v[j] = x;
  }
  med = round_to(t, theta % 2 ? v[h] : (v[h - 1] + v[h]) / 2);
  /* The beta values closest to the median are a run of the sorted values:
  ** grow it from the median outwards, the nearer side first (the lower on
  ** a tie; Flower's np.argpartition leaves ties unspecified). */
  for (lo = 0; lo < theta && v[lo] < med; lo++) {}
  hi = lo;
  for (i = 0; i < beta; i++) {
    if (lo > 0 && (hi == theta || med - v[lo - 1] <= v[hi] - med))
      lo--;
    else
      hi++;
  }
  for (i = lo; i < hi; i++) sum += v[i];
  return sum / (double)beta;
}

/* rb_bulyan_block: a vector of coordinates at a time (8, 4 or 2), one per
** lane, when all their values are finite and theta <= RB_NET_MAX. The values are sorted by
** Batcher's odd-even merge network (min and max are exact, so the sorted
** values are rb_bulyan_coord's, +0 and -0 aside: equal, and they change no
** bit of the result below). The median is rb_bulyan_coord's. Its run of beta
** values starts at p, the number of q in [0, theta - beta) with
** v[q + beta] - med < med - v[q]: that test is monotone in q (true, then
** false), and it is exactly the test the outward growth makes between the
** two ends of its run (false: the lower side is taken, as on a tie), so the
** run is the same. The sum adds +0 for the values outside the run, which
** changes nothing (a sum that starts at +0 is never -0). Other
** coordinates go through rb_bulyan_coord. */
#define RB_NET_MAX 64

/* The comparators of Batcher's network for RB_NET_MAX inputs that touch
** indices below n only (the others would compare with +inf padding and
** never swap); returns their count (at most 543 for 64). */
static size_t net_pairs(size_t n, uint8_t (*pairs)[2]) {
  size_t P = 1, p, k, j, i, c = 0;
  while (P < n) P <<= 1;
  for (p = 1; p < P; p <<= 1)
    for (k = p; k >= 1; k >>= 1)
      for (j = k % p; j + k < P; j += 2 * k)
        for (i = 0; i < k && i + j + k < P; i++)
          if ((i + j) / (2 * p) == (i + j + k) / (2 * p) && i + j + k < n) {
            pairs[c][0] = (uint8_t)(i + j);
            pairs[c][1] = (uint8_t)(i + j + k);
            c++;
          }
  return c;
}

/* Batcher's networks for 16 and 32 inputs (net_pairs(16), net_pairs(32)),
** as constants so that the compiler unrolls them and keeps the values in
** registers; fewer values are padded with +inf, which never moves. */
static const uint8_t rb_net16[63][2] = {
    {0, 1},   {2, 3},  {4, 5},  {6, 7},   {8, 9},   {10, 11}, {12, 13}, {14, 15}, {0, 2},   {1, 3},   {4, 6},
    {5, 7},   {8, 10}, {9, 11}, {12, 14}, {13, 15}, {1, 2},   {5, 6},   {9, 10},  {13, 14}, {0, 4},   {1, 5},
    {2, 6},   {3, 7},  {8, 12}, {9, 13},  {10, 14}, {11, 15}, {2, 4},   {3, 5},   {10, 12}, {11, 13}, {1, 2},
    {3, 4},   {5, 6},  {9, 10}, {11, 12}, {13, 14}, {0, 8},   {1, 9},   {2, 10},  {3, 11},  {4, 12},  {5, 13},
    {6, 14},  {7, 15}, {4, 8},  {5, 9},   {6, 10},  {7, 11},  {2, 4},   {3, 5},   {6, 8},   {7, 9},   {10, 12},
    {11, 13}, {1, 2},  {3, 4},  {5, 6},   {7, 8},   {9, 10},  {11, 12}, {13, 14}};
static const uint8_t rb_net32[191][2] = {
    {0, 1},   {2, 3},   {4, 5},   {6, 7},   {8, 9},   {10, 11}, {12, 13}, {14, 15}, {16, 17}, {18, 19}, {20, 21},
    {22, 23}, {24, 25}, {26, 27}, {28, 29}, {30, 31}, {0, 2},   {1, 3},   {4, 6},   {5, 7},   {8, 10},  {9, 11},
    {12, 14}, {13, 15}, {16, 18}, {17, 19}, {20, 22}, {21, 23}, {24, 26}, {25, 27}, {28, 30}, {29, 31}, {1, 2},
    {5, 6},   {9, 10},  {13, 14}, {17, 18}, {21, 22}, {25, 26}, {29, 30}, {0, 4},   {1, 5},   {2, 6},   {3, 7},
    {8, 12},  {9, 13},  {10, 14}, {11, 15}, {16, 20}, {17, 21}, {18, 22}, {19, 23}, {24, 28}, {25, 29}, {26, 30},
    {27, 31}, {2, 4},   {3, 5},   {10, 12}, {11, 13}, {18, 20}, {19, 21}, {26, 28}, {27, 29}, {1, 2},   {3, 4},
    {5, 6},   {9, 10},  {11, 12}, {13, 14}, {17, 18}, {19, 20}, {21, 22}, {25, 26}, {27, 28}, {29, 30}, {0, 8},
    {1, 9},   {2, 10},  {3, 11},  {4, 12},  {5, 13},  {6, 14},  {7, 15},  {16, 24}, {17, 25}, {18, 26}, {19, 27},
    {20, 28}, {21, 29}, {22, 30}, {23, 31}, {4, 8},   {5, 9},   {6, 10},  {7, 11},  {20, 24}, {21, 25}, {22, 26},
    {23, 27}, {2, 4},   {3, 5},   {6, 8},   {7, 9},   {10, 12}, {11, 13}, {18, 20}, {19, 21}, {22, 24}, {23, 25},
    {26, 28}, {27, 29}, {1, 2},   {3, 4},   {5, 6},   {7, 8},   {9, 10},  {11, 12}, {13, 14}, {17, 18}, {19, 20},
    {21, 22}, {23, 24}, {25, 26}, {27, 28}, {29, 30}, {0, 16},  {1, 17},  {2, 18},  {3, 19},  {4, 20},  {5, 21},
    {6, 22},  {7, 23},  {8, 24},  {9, 25},  {10, 26}, {11, 27}, {12, 28}, {13, 29}, {14, 30}, {15, 31}, {8, 16},
    {9, 17},  {10, 18}, {11, 19}, {12, 20}, {13, 21}, {14, 22}, {15, 23}, {4, 8},   {5, 9},   {6, 10},  {7, 11},
    {12, 16}, {13, 17}, {14, 18}, {15, 19}, {20, 24}, {21, 25}, {22, 26}, {23, 27}, {2, 4},   {3, 5},   {6, 8},
    {7, 9},   {10, 12}, {11, 13}, {14, 16}, {15, 17}, {18, 20}, {19, 21}, {22, 24}, {23, 25}, {26, 28}, {27, 29},
    {1, 2},   {3, 4},   {5, 6},   {7, 8},   {9, 10},  {11, 12}, {13, 14}, {15, 16}, {17, 18}, {19, 20}, {21, 22},
    {23, 24}, {25, 26}, {27, 28}, {29, 30}};

/* BLOCK(cols, stride, theta, beta, t, m, out, tmp): rb_bulyan_block with
** VL coordinates a vector of VT (VL doubles; LT: VL int64, VTU unaligned):
** one zmm, one ymm or one xmm register, so that compare and blend stay
** vector instructions on every path. */
#define RB_BULYAN_FN(ATTR, BLOCK, VT, VTU, LT, VL)                                                                 \
  ATTR static void BLOCK(const double *cols, size_t stride, size_t theta, size_t beta, dt_type t, size_t m,        \
                         double *out, double *tmp) {                                                               \
    uint8_t pairs[543][2];                                                                                         \
    size_t np = theta > 32 && theta <= RB_NET_MAX ? net_pairs(theta, pairs) : 0, j = 0, s, l, c, q, h = theta / 2; \
    if (theta <= RB_NET_MAX)                                                                                       \
      for (; j + VL <= m; j += VL) {                                                                               \
        VT w[RB_NET_MAX], med, sum = (VT){0};                                                                      \
        LT bad = (LT){0}, p = (LT){0};                                                                             \
        for (s = 0; s < theta; s++) {                                                                              \
          w[s] = *(const VTU *)(const void *)(cols + s * stride + j);                                              \
          bad |= w[s] - w[s] != 0; /* NaN or infinite */                                                           \
        }                                                                                                          \
        for (l = 0; l < VL; l++)                                                                                   \
          if (bad[l]) break;                                                                                       \
        if (l < VL) {                                                                                              \
          for (l = 0; l < VL; l++) {                                                                               \
            for (s = 0; s < theta; s++) tmp[s] = cols[s * stride + j + l];                                         \
            out[j + l] = rb_bulyan_coord(tmp, theta, beta, t);                                                     \
          }                                                                                                        \
          continue;                                                                                                \
        }                                                                                                          \
        if (theta <= 16) {                                                                                         \
          for (s = theta; s < 16; s++)                                                                             \
            for (l = 0; l < VL; l++) w[s][l] = HUGE_VAL;                                                           \
          _Pragma("GCC unroll 64") for (c = 0; c < 63; c++) RB_CMPX(VT, LT, w, rb_net16[c][0], rb_net16[c][1]);    \
        } else if (theta <= 32) {                                                                                  \
          for (s = theta; s < 32; s++)                                                                             \
            for (l = 0; l < VL; l++) w[s][l] = HUGE_VAL;                                                           \
          _Pragma("GCC unroll 200") for (c = 0; c < 191; c++) RB_CMPX(VT, LT, w, rb_net32[c][0], rb_net32[c][1]);  \
        } else {                                                                                                   \
          for (c = 0; c < np; c++) RB_CMPX(VT, LT, w, pairs[c][0], pairs[c][1]);                                   \
        }                                                                                                          \
        /* the median, the run, its mean */                                                                        \
        med = theta % 2 ? w[h] : (w[h - 1] + w[h]) / 2;                                                            \
        if (t == DT_FLOAT32 || t == DT_FLOAT16)                                                                    \
          for (l = 0; l < VL; l++) med[l] = round_to(t, med[l]);                                                   \
        for (q = 0; q + beta < theta; q++) p -= (w[q + beta] - med) < (med - w[q]);                                \
        for (q = 0; q < theta; q++) {                                                                              \
          LT iq = (LT){0}, in;                                                                                     \
          iq += (int64_t)q;                                                                                        \
          in = (iq >= p) & (iq < p + (int64_t)beta);                                                               \
          sum += (VT)(in & (LT)w[q]); /* +0 outside the run */                                                     \
        }                                                                                                          \
        sum = sum / (double)beta;                                                                                  \
        memcpy(out + j, &sum, sizeof sum);                                                                         \
      }                                                                                                            \
    for (; j < m; j++) {                                                                                           \
      for (s = 0; s < theta; s++) tmp[s] = cols[s * stride + j];                                                   \
      out[j] = rb_bulyan_coord(tmp, theta, beta, t);                                                               \
    }                                                                                                              \
  }

/* A comparator: w[i] = min, w[k] = max (exact; no NaN gets here). */
#define RB_CMPX(VT, LT, w, i, k)                  \
  do {                                            \
    VT a_ = (w)[i], b_ = (w)[k];                  \
    LT lt_ = b_ < a_, ai_ = (LT)a_, bi_ = (LT)b_; \
    (w)[i] = (VT)((lt_ & bi_) | (~lt_ & ai_));    \
    (w)[k] = (VT)((lt_ & ai_) | (~lt_ & bi_));    \
  } while (0)

typedef int64_t rb_l4 __attribute__((vector_size(32)));
typedef int64_t rb_l2 __attribute__((vector_size(16)));
RB_BULYAN_FN(, bulyan_base, rb_v2, rb_v2u, rb_l2, 2)
#if KN_CLONES
RB_BULYAN_FN(__attribute__((target("avx2"))), bulyan_avx2, rb_v4, rb_v4u, rb_l4, 4)
RB_BULYAN_FN(__attribute__((target("avx512f"))), bulyan_avx512, rb_v8, rb_v8u, rb_l8, 8)
#endif

void rb_bulyan_block(const double *cols, size_t stride, size_t theta, size_t beta, dt_type t, size_t m, double *out,
                     double *tmp) {
#if KN_CLONES
  int isa = isa_now();
  if (isa == RB_ISA_AVX512) {
    bulyan_avx512(cols, stride, theta, beta, t, m, out, tmp);
    return;
  }
  if (isa == RB_ISA_AVX2) {
    bulyan_avx2(cols, stride, theta, beta, t, m, out, tmp);
    return;
  }
#endif
  bulyan_base(cols, stride, theta, beta, t, m, out, tmp);
}

/* --- Combining the selected rows --------------------------------------- */

/* rb_combine_rows: the pool starts one part per thread, each with its own
** scratch, and the parts claim the segment's blocks one at a time. Every
** element's result depends on that element's values alone, so any split
** gives the one-thread bits. */
typedef struct cb_job {
  const unsigned char *const *rows;
  const double *weights;
  size_t ns, beta, block;
  const rb_seg *seg;
  dt_type out;
  unsigned char *dst;
  double **tmp;
  uint64_t unit;       /* elements of one part's share: its scratch is tmp[begin / unit] */
  size_t blocks, next; /* blocks, and the next to claim */
} cb_job;

static void cb_part(void *ctx, uint64_t begin, uint64_t end, unsigned char *scratch) {
  cb_job *j = ctx;
  double *tmp = j->tmp[begin / j->unit];
  size_t size = dt_size(j->seg->type), osize = dt_size(j->out), m, s, b;
  (void)end;
  (void)scratch;
  size_t c;
  while ((c = rb_claim(&j->next) * RB_CLAIM) < j->blocks)
    for (b = c; b < c + RB_CLAIM && b < j->blocks; b++) {
      const uint64_t e = (uint64_t)b * j->block, at = j->seg->at + e * size;
      m = j->seg->numel - e < j->block ? (size_t)(j->seg->numel - e) : j->block;
      if (j->weights) { /* FedAvg, rows in the order given */
        for (s = 0; s < j->ns; s++)
          rb_fedavg_step(j->seg->type, j->rows[s] + at, j->weights[s], j->dst + e * osize, m, s == 0, tmp);
      } else {
        double *cols = tmp, *vals = tmp + j->block * j->ns, *res = vals + j->ns;
        for (s = 0; s < j->ns; s++) kn_to_f64(j->seg->type, j->rows[s] + at, cols + s * j->block, m);
        rb_bulyan_block(cols, j->block, j->ns, j->beta, j->seg->type, m, res, vals);
        kn_from_f64(j->out, res, j->dst + e * osize, m);
      }
    }
}

int rb_combine_rows(const unsigned char *const *rows, const double *weights, size_t ns, size_t beta, const rb_seg *seg,
                    dt_type out, void *dst, size_t block) {
  cb_job j;
  size_t slices = (size_t)pool_threads(), s, blocks;
  int rc = CODEC_OK;
  if (!seg->numel || !ns) return CODEC_OK;
  if (slices < 1) slices = 1;
  blocks = (size_t)((seg->numel + block - 1) / block);
  if (slices > blocks) slices = blocks;
  memset(&j, 0, sizeof j);
  j.rows = rows;
  j.weights = weights;
  j.ns = ns;
  j.beta = beta;
  j.block = block;
  j.seg = seg;
  j.out = out;
  j.dst = dst;
  j.unit = (uint64_t)((blocks + slices - 1) / slices) * block;
  j.blocks = blocks;
  if (!(j.tmp = codec_malloc((uint64_t)slices * sizeof(double *)))) return CODEC_NOMEM;
  memset(j.tmp, 0, slices * sizeof(double *));
  for (s = 0; s < slices; s++)
    if (!(j.tmp[s] = codec_malloc(((uint64_t)block * (ns + 4) + ns) * sizeof(double)))) rc = CODEC_NOMEM;
  if (rc == CODEC_OK) pool_run(j.unit * slices, j.unit, cb_part, &j, NULL);
  for (s = 0; s < slices; s++) codec_free(j.tmp[s]);
  codec_free(j.tmp);
  return rc;
}

/* --- Gaussian noise ------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void rb_rng_seed(rb_rng *r, uint64_t seed) {
  int i;
  for (i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
  r->has_spare = 0;
  r->spare = 0;
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rb_rng_next(rb_rng *r) {
  uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

/* fdlibm's __ieee754_log (Sun Microsystems, 1993): argument reduction to
** [sqrt(2)/2, sqrt(2)) and a minimax polynomial in s = f / (2 + f). */
double rb_log(double x) {
  static const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10,
                      Lg1 = 6.666666666666735130e-01, Lg2 = 3.999999999940941908e-01, Lg3 = 2.857142874366239149e-01,
                      Lg4 = 2.222219843214978396e-01, Lg5 = 1.818357216161805012e-01, Lg6 = 1.531383769920937332e-01,
                      Lg7 = 1.479819860511658591e-01;
  int e;
  double m = frexp(x, &e), f, s, z, w, r, hfsq, dk;
  if (m < 0.70710678118654752440) {
    m *= 2;
    e--;
  }
  f = m - 1;
  dk = (double)e;
  s = f / (2.0 + f);
  z = s * s;
  w = z * z;
  r = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7))) + w * (Lg2 + w * (Lg4 + w * Lg6));
  hfsq = 0.5 * f * f;
  return dk * ln2_hi - ((hfsq - (s * (hfsq + r) + dk * ln2_lo)) - f);
}

static double uniform(rb_rng *r) { return (double)(rb_rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

double rb_rng_normal(rb_rng *r) {
  double u, v, s, f;
  if (r->has_spare) {
    r->has_spare = 0;
    return r->spare;
  }
  do {
    u = 2.0 * uniform(r) - 1.0;
    v = 2.0 * uniform(r) - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  f = sqrt(-2.0 * rb_log(s) / s); /* sqrt is correctly rounded by IEEE 754 */
  r->spare = v * f;
  r->has_spare = 1;
  return u * f;
}

void rb_add_noise(dt_type t, void *x, size_t m, double stddev, rb_rng *r) {
  unsigned char *p = x;
  size_t i;
  if (dt_kind(t) != DT_KIND_FLOAT && dt_kind(t) != DT_KIND_COMPLEX) return; /* no draws for integers */
  for (i = 0; i < m; i++) {
    double z = stddev * rb_rng_normal(r);
    switch (t) {
      case DT_FLOAT32:
      case DT_COMPLEX64: {
        float v, nz = (float)z;
        size_t at = (t == DT_COMPLEX64 ? 8 : 4) * i;
        memcpy(&v, p + at, 4);
        v = v + nz;
        memcpy(p + at, &v, 4);
        break;
      }
      case DT_FLOAT64:
      case DT_COMPLEX128: {
        double v;
        size_t at = (t == DT_COMPLEX128 ? 16 : 8) * i;
        memcpy(&v, p + at, 8);
        v = v + z;
        memcpy(p + at, &v, 8);
        break;
      }
      case DT_FLOAT16: {
        uint16_t h;
        float nz = (float)dt_half_to_double(dt_double_to_half(z));
        memcpy(&h, p + 2 * i, 2);
        h = dt_double_to_half((double)((float)dt_half_to_double(h) + nz));
        memcpy(p + 2 * i, &h, 2);
        break;
      }
      default: return;
    }
  }
}
