/* SPDX-License-Identifier: Apache-2.0 */
/*
** orderstat.c — per-element median and trimmed mean across rows (see
** orderstat.h).
**
** Keys. Every value becomes an integer whose order is NumPy's: integers
** themselves (unsigned ones with the top bit flipped), floats by their
** bits (a negative float's magnitude bits inverted, so -0.0 is just below
** 0.0 and larger magnitudes lie further down; every NaN is the largest
** key, above +inf, as np.partition puts NaNs last). Keys are 32-bit for
** types of 4 bytes or fewer and 64-bit for the others; a tile row is 64
** bytes: 16 elements of 32-bit keys or 8 of 64-bit ones.
**
** The network is Batcher's odd-even merge sort on n inputs (a power-of-two
** network with the comparators that touch a position >= n left out: those
** positions would hold +infinity and never move), pruned backwards to the
** comparators whose outputs reach a rank the answer reads. Each comparator
** is a min and a max of two tile rows: 16 (or 8) elements at once, with no
** branch, in whatever SIMD the CPU has (AVX-512, AVX2 or the baseline
** clone; integer min and max give the same bits on all of them). Which key
** ends at which rank is exact; only equal keys can trade places, and equal
** keys are equal bits, so the answer does not depend on the network. The
** one thing NumPy's answer can depend on besides the ranks is which of
** several NaNs (equal to its comparisons, not in their bits) its partition
** leaves last: each lane's largest key, gathered with the keys, spots the
** elements holding a NaN, and median_nan answers for those.
*/
#include "math/orderstat.h"

#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "math/kernels.h"
#include "math/npselect.h"
#include "math/pool.h"

typedef unsigned char uchar;

#define ROW_BYTES 64
#define LANES32 16
#define LANES64 8
/* Tile rows per thread: sub-tiles of one row each are gathered together, so
** each row is read in runs of up to 16 cache lines. */
#define TILE_BYTES ((size_t)256 << 10)

struct os_plan {
  size_t n, cut;
  int op;
  size_t ranks[2]; /* the ranks read: lo, hi (equal for an odd median) */
  uint32_t *net;   /* ncmp pairs of byte offsets (a * 64, b * 64), a < b */
  size_t ncmp;
};

/* --- the network ---------------------------------------------------------- */

/* Batcher's odd-even merge sort for n inputs: the comparators (a, b), a < b,
** in order, into out (when not NULL); returns their count. */
static size_t batcher(size_t n, uint32_t *out) {
  size_t p = 1, pp, k, j, i, c = 0;
  while (p < n) p <<= 1;
  for (pp = 1; pp < p; pp <<= 1)
    for (k = pp; k >= 1; k >>= 1)
      for (j = k % pp; j + k < p; j += 2 * k)
        for (i = 0; i < k && i + j + k < p; i++)
          if ((i + j) / (pp * 2) == (i + j + k) / (pp * 2) && i + j + k < n) {
            if (out) {
              out[2 * c] = (uint32_t)(i + j);
              out[2 * c + 1] = (uint32_t)(i + j + k);
            }
            c++;
          }
  return c;
}

os_plan *os_plan_new(size_t n, int op, size_t cut) {
  os_plan *p = codec_malloc(sizeof(os_plan));
  uint32_t *full = NULL;
  uchar *need = NULL;
  size_t i, total;
  if (!p) return NULL;
  memset(p, 0, sizeof(*p));
  p->n = n;
  p->op = op;
  p->cut = op == OS_TRIMMED ? cut : 0;
  if (op == OS_MEDIAN) {
    p->ranks[1] = n / 2;
    p->ranks[0] = n % 2 ? n / 2 : n / 2 - 1;
  } else {
    p->ranks[0] = cut;
    p->ranks[1] = n - cut - 1;
  }
  if (n < 2 || n > OS_NET_MAX) return p; /* one row needs no network; many rows select per element */
  total = batcher(n, NULL);
  full = codec_malloc((uint64_t)total * 2 * sizeof(uint32_t));
  need = codec_malloc(n);
  p->net = codec_malloc((uint64_t)total * 2 * sizeof(uint32_t));
  if (!full || !need || !p->net) {
    codec_free(full);
    codec_free(need);
    os_plan_free(p);
    return NULL;
  }
  batcher(n, full);
  memset(need, 0, n);
  for (i = p->ranks[0]; i <= p->ranks[1]; i++) need[i] = 1;
  /* Pruned backwards: a comparator stays when one of its outputs is
  ** needed later, and then both its inputs are. */
  for (i = total; i-- > 0;) {
    uint32_t a = full[2 * i], b = full[2 * i + 1];
    if (need[a] || need[b]) {
      need[a] = need[b] = 1;
      full[2 * i] |= UINT32_C(0x80000000); /* kept (n <= OS_NET_MAX: the bit is free) */
    }
  }
  for (i = 0; i < total; i++)
    if (full[2 * i] & UINT32_C(0x80000000)) {
      p->net[2 * p->ncmp] = (full[2 * i] & UINT32_C(0x7fffffff)) * ROW_BYTES;
      p->net[2 * p->ncmp + 1] = full[2 * i + 1] * ROW_BYTES;
      p->ncmp++;
    }
  codec_free(full);
  codec_free(need);
  return p;
}

void os_plan_free(os_plan *p) {
  if (!p) return;
  codec_free(p->net);
  codec_free(p);
}

size_t os_plan_comparators(const os_plan *p) { return p->ncmp; }

/* --- keys ------------------------------------------------------------------ */

/* A float's bits (magnitude bits m, sign s) as a key: m, or -1 - m when
** negative; NaN is the largest key. Branch-free, so gathers vectorize. */
static inline int32_t key_f32(uint32_t b) {
  uint32_t m = b & UINT32_C(0x7fffffff);
  int32_t k = (int32_t)(m ^ (uint32_t)(-(int32_t)(b >> 31)));
  return m > UINT32_C(0x7f800000) ? INT32_MAX : k;
}
static inline int32_t key_f16(uint16_t h) {
  int32_t m = h & 0x7fff;
  return m > 0x7c00 ? INT32_MAX : (h & 0x8000) ? -1 - m : m;
}
static inline int64_t key_f64(uint64_t b) {
  uint64_t m = b & UINT64_C(0x7fffffffffffffff);
  int64_t k = (int64_t)(m ^ (uint64_t)(-(int64_t)(b >> 63)));
  return m > UINT64_C(0x7ff0000000000000) ? INT64_MAX : k;
}
/* The bits back (a NaN key gives a NaN). */
static inline uint32_t f32_bits(int32_t k) { return k < 0 ? UINT32_C(0x80000000) | (uint32_t)(-1 - k) : (uint32_t)k; }
static inline uint16_t f16_bits(int32_t k) { return (uint16_t)(k < 0 ? 0x8000 | (-1 - k) : (k > 0xffff ? 0x7fff : k)); }
static inline uint64_t f64_bits(int64_t k) {
  return k < 0 ? UINT64_C(0x8000000000000000) | (uint64_t)(-1 - k) : (uint64_t)k;
}
static inline float f32_of_key(int32_t k) {
  uint32_t b = f32_bits(k);
  float f;
  memcpy(&f, &b, 4);
  return f;
}
static inline double f64_of_key(int64_t k) {
  uint64_t b = f64_bits(k);
  double d;
  memcpy(&d, &b, 8);
  return d;
}

static int wide_keys(dt_type t) { return dt_size(t) == 8; }
static int floating(dt_type t) { return dt_kind(t) == DT_KIND_FLOAT; }

/* Element i of src (type t, native) as its key. */
static int64_t key_of(dt_type t, const uchar *src, size_t i) {
  union {
    uint8_t u8;
    int8_t i8;
    uint16_t u16;
    int16_t i16;
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    int64_t i64;
  } x;
  memcpy(&x, src + i * dt_size(t), dt_size(t));
  switch (t) {
    case DT_BOOL:
    case DT_UINT8: return x.u8;
    case DT_INT8: return x.i8;
    case DT_UINT16: return x.u16;
    case DT_INT16: return x.i16;
    case DT_UINT32: return (int32_t)(x.u32 ^ UINT32_C(0x80000000));
    case DT_INT32: return x.i32;
    case DT_UINT64: return (int64_t)(x.u64 ^ UINT64_C(0x8000000000000000));
    case DT_INT64: return x.i64;
    case DT_FLOAT16: return key_f16(x.u16);
    case DT_FLOAT32: return key_f32(x.u32);
    default: return key_f64(x.u64); /* DT_FLOAT64 */
  }
}

/* A key's value as a double (exact for every type but 64-bit integers,
** which round as NumPy's cast to float64 does). */
static double key_value(dt_type t, int64_t k) {
  switch (t) {
    case DT_UINT32: return (double)((uint32_t)k ^ UINT32_C(0x80000000));
    case DT_UINT64: return (double)((uint64_t)k ^ UINT64_C(0x8000000000000000));
    case DT_FLOAT16: return dt_half_to_double(f16_bits((int32_t)k));
    case DT_FLOAT32: return (double)f32_of_key((int32_t)k);
    case DT_FLOAT64: return f64_of_key(k);
    default: return (double)k;
  }
}

/* --- results --------------------------------------------------------------- */

/* The median of the middle keys lo and hi (hi alone when odd), computed as
** np.median does: the mean of part[k-1:k+1] (part[k:k+1] when odd) in the
** array's type (float16 in float32, then rounded), which NumPy's reduction
** over axis 0 starts from its identity 0.0, so ((0 + lo) + hi) / 2 and
** (0 + hi) / 1: a zero comes out as 0.0, never -0.0. Into dst (type out). */
static void median_store(dt_type t, int odd, int64_t lo, int64_t hi, dt_type out, uchar *dst) {
  if (t == DT_FLOAT32) {
    float a = f32_of_key((int32_t)lo), b = f32_of_key((int32_t)hi),
          r = odd ? (0.0f + b) / 1.0f : ((0.0f + a) + b) / 2.0f;
    memcpy(dst, &r, 4);
  } else if (t == DT_FLOAT16) {
    float a = (float)key_value(t, lo), b = (float)key_value(t, hi),
          r = odd ? (0.0f + b) / 1.0f : ((0.0f + a) + b) / 2.0f;
    uint16_t h = dt_double_to_half((double)r);
    memcpy(dst, &h, 2);
  } else {
    double a = key_value(t, lo), b = key_value(t, hi), r = odd ? (0.0 + b) / 1.0 : ((0.0 + a) + b) / 2.0;
    (void)out; /* float64 for every other type */
    memcpy(dst, &r, 8);
  }
}

/* The trimmed mean from the kept values' sum, rounded once to out. */
static void mean_store(double sum, size_t keep, dt_type out, uchar *dst) {
  double r = sum / (double)keep;
  if (out == DT_FLOAT32) {
    float f = (float)r;
    memcpy(dst, &f, 4);
  } else if (out == DT_FLOAT16) {
    uint16_t h = dt_double_to_half(r);
    memcpy(dst, &h, 2);
  } else {
    memcpy(dst, &r, 8);
  }
}

/* A NaN among element e's values (max is its largest key): np.median
** answers with the NaN its partition put last (NumPy 2 copies that NaN's
** bits; NumPy 1 wrote a plain NaN). When every NaN there has the same bits,
** that is the one; otherwise NumPy's partition is run (npselect.c) on the
** values in row order (col holds n items) to see which NaN it leaves last.
** Into dst (type t, floating). */
static void median_nan(const os_plan *p, dt_type t, const uchar *const *rows, uint64_t e, uchar *dst, nps_item *col) {
  size_t n = p->n, size = dt_size(t), r, k = n / 2, kth[3], nk = 0, nan_at = n;
  int uniform = 1;
  for (r = 0; r < n; r++) {
    const uchar *x = rows[r] + e * size;
    int64_t key = key_of(t, rows[r], (size_t)e);
    col[r].v = key_value(t, key);
    col[r].row = (uint32_t)r;
    if (key == (wide_keys(t) ? INT64_MAX : INT32_MAX)) {
      if (nan_at == n)
        nan_at = r;
      else if (memcmp(x, rows[nan_at] + e * size, size) != 0)
        uniform = 0;
    }
  }
  if (!uniform) {
    if (n % 2 == 0) kth[nk++] = k - 1;
    kth[nk++] = k;
    kth[nk++] = n - 1; /* np.median asks for the last position too: its NaN check */
    nps_partition(col, n, kth, nk, t == DT_FLOAT16);
    nan_at = col[n - 1].row;
  }
  memcpy(dst, rows[nan_at] + e * size, size);
}

static int64_t nan_key(dt_type t) { return wide_keys(t) ? INT64_MAX : INT32_MAX; }

/* --- the tiles ------------------------------------------------------------- */

#if KN_CLONES
#define OS_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define OS_CLONES
#endif

/* The network over a tile of n rows of 64 bytes: each comparator puts the
** smaller key of every lane in its first row, the larger in its second. */
#define DEF_NET(NAME, T, LANES)                                               \
  OS_CLONES static void NAME(uchar *tile, const uint32_t *net, size_t ncmp) { \
    size_t c;                                                                 \
    int l;                                                                    \
    for (c = 0; c < ncmp; c++) {                                              \
      T a[LANES], b[LANES], lo[LANES], hi[LANES];                             \
      uchar *pa = tile + net[2 * c], *pb = tile + net[2 * c + 1];             \
      memcpy(a, pa, ROW_BYTES);                                               \
      memcpy(b, pb, ROW_BYTES);                                               \
      for (l = 0; l < LANES; l++) {                                           \
        lo[l] = a[l] < b[l] ? a[l] : b[l];                                    \
        hi[l] = a[l] < b[l] ? b[l] : a[l];                                    \
      }                                                                       \
      memcpy(pa, lo, ROW_BYTES);                                              \
      memcpy(pb, hi, ROW_BYTES);                                              \
    }                                                                         \
  }
DEF_NET(net_run32, int32_t, LANES32)
DEF_NET(net_run64, int64_t, LANES64)

/* 16 float32 values (64 bytes at src) as keys into row, their lanes' maxima
** raised. */
static inline void keys_f32(const uchar *src, uchar *row, int32_t *max) {
  uint32_t b[LANES32];
  int32_t k[LANES32];
  int l;
  memcpy(b, src, ROW_BYTES);
  for (l = 0; l < LANES32; l++) {
    k[l] = key_f32(b[l]);
    max[l] = k[l] > max[l] ? k[l] : max[l];
  }
  memcpy(row, k, ROW_BYTES);
}

/* float32 rows into sub-tiles of 16 lanes (the hot gather): each row's m
** elements read in one run, lanes past m keyed as 0.0. max: every
** sub-tile's 16 lane maxima. */
OS_CLONES static void gather_f32(const uchar *const *rows, size_t n, uint64_t e0, size_t m, uchar *tile, int64_t *max) {
  int32_t mx[16 * LANES32];
  size_t r, s, full = m / LANES32, rest = m % LANES32, i;
  for (i = 0; i < 16 * LANES32; i++) mx[i] = INT32_MIN;
  for (r = 0; r < n; r++) {
    const uchar *src = rows[r] + e0 * 4;
    for (s = 0; s < full; s++) keys_f32(src + s * ROW_BYTES, tile + (s * n + r) * ROW_BYTES, mx + s * LANES32);
    if (rest) {
      uchar last[ROW_BYTES];
      memset(last, 0, ROW_BYTES);
      memcpy(last, src + full * ROW_BYTES, rest * 4);
      keys_f32(last, tile + (full * n + r) * ROW_BYTES, mx + full * LANES32);
    }
  }
  for (i = 0; i < (full + (rest != 0)) * LANES32; i++) max[i] = mx[i];
}

/* Any other type into sub-tiles of 16 (32-bit keys) or 8 (64-bit) lanes. */
static void gather_any(dt_type t, const uchar *const *rows, size_t n, uint64_t e0, size_t m, uchar *tile,
                       int64_t *max) {
  int wide = wide_keys(t), lanes = wide ? LANES64 : LANES32, l;
  size_t r, s, nsub = (m + (size_t)lanes - 1) / (size_t)lanes, size = dt_size(t);
  for (s = 0; s < nsub * (size_t)lanes; s++) max[s] = INT64_MIN;
  for (r = 0; r < n; r++) {
    const uchar *src = rows[r] + e0 * size;
    for (s = 0; s < nsub; s++) {
      uchar *row = tile + (s * n + r) * ROW_BYTES;
      int64_t *mx = max + s * (size_t)lanes;
      for (l = 0; l < lanes; l++) {
        size_t i = s * (size_t)lanes + (size_t)l;
        int64_t k = i < m ? key_of(t, src, i) : 0;
        if (wide) {
          memcpy(row + l * 8, &k, 8);
        } else {
          int32_t k32 = (int32_t)k;
          memcpy(row + l * 4, &k32, 4);
        }
        mx[l] = k > mx[l] ? k : mx[l];
      }
    }
  }
}

/* The key at rank r of lane l in a sorted sub-tile. */
static inline int64_t tile_key(const uchar *sub, int wide, size_t r, int l) {
  if (wide) {
    int64_t k;
    memcpy(&k, sub + r * ROW_BYTES + (size_t)l * 8, 8);
    return k;
  } else {
    int32_t k;
    memcpy(&k, sub + r * ROW_BYTES + (size_t)l * 4, 4);
    return k;
  }
}

/* float32 medians of a sorted sub-tile's 16 lanes (the hot case). */
OS_CLONES static void median_lanes_f32(const uchar *sub, size_t lo_rank, size_t hi_rank, int odd, float *res) {
  int32_t lo[LANES32], hi[LANES32];
  int l;
  memcpy(lo, sub + lo_rank * ROW_BYTES, ROW_BYTES);
  memcpy(hi, sub + hi_rank * ROW_BYTES, ROW_BYTES);
  for (l = 0; l < LANES32; l++) {
    float a = f32_of_key(lo[l]), b = f32_of_key(hi[l]);
    res[l] = odd ? (0.0f + b) / 1.0f : ((0.0f + a) + b) / 2.0f; /* median_store's arithmetic */
  }
}

/* Sums in double of a sorted sub-tile's ranks [from, to), lane by lane in
** rank order (float32 keys: the hot case). */
OS_CLONES static void sum_lanes_f32(const uchar *sub, size_t from, size_t to, double *sum) {
  size_t r;
  int l;
  for (l = 0; l < LANES32; l++) sum[l] = 0;
  for (r = from; r < to; r++) {
    int32_t k[LANES32];
    memcpy(k, sub + r * ROW_BYTES, ROW_BYTES);
    for (l = 0; l < LANES32; l++) sum[l] += (double)f32_of_key(k[l]);
  }
}

/* Per-thread work space. */
typedef struct os_space {
  void *raw;     /* the block holding the rest */
  uchar *tile;   /* sub-tiles, 64-byte aligned */
  int64_t *max;  /* each lane's largest key, for every sub-tile (or column) */
  nps_item *col; /* one element's values, for median_nan */
  int64_t *keys; /* the per-element path: W columns of n keys */
} os_space;

typedef struct os_job {
  const os_plan *p;
  dt_type t, out;
  const uchar *const *rows;
  uint64_t numel;
  uchar *dst;
  size_t span;  /* elements per super-tile */
  size_t tiles; /* super-tiles */
  size_t next;  /* the next super-tile to claim */
  uint64_t unit;
  os_space *space; /* one per slice */
} os_job;

/* Elements e0 .. e0 + m through the network path. */
static void run_tiles(const os_job *j, const os_space *sp, uint64_t e0, size_t m) {
  const os_plan *p = j->p;
  dt_type t = j->t;
  int wide = wide_keys(t), lanes = wide ? LANES64 : LANES32, odd = (int)(p->n % 2), l;
  size_t s, nsub = (m + (size_t)lanes - 1) / (size_t)lanes, osize = dt_size(j->out);
  if (t == DT_FLOAT32)
    gather_f32(j->rows, p->n, e0, m, sp->tile, sp->max);
  else
    gather_any(t, j->rows, p->n, e0, m, sp->tile, sp->max);
  for (s = 0; s < nsub; s++) {
    uchar *sub = sp->tile + s * p->n * ROW_BYTES;
    const int64_t *mx = sp->max + s * (size_t)lanes;
    size_t cnt = m - s * (size_t)lanes < (size_t)lanes ? m - s * (size_t)lanes : (size_t)lanes;
    uchar *dst = j->dst + (e0 + s * (size_t)lanes) * osize;
    if (wide)
      net_run64(sub, p->net, p->ncmp);
    else
      net_run32(sub, p->net, p->ncmp);
    if (p->op == OS_MEDIAN) {
      if (t == DT_FLOAT32) {
        float res[LANES32];
        median_lanes_f32(sub, p->ranks[0], p->ranks[1], odd, res);
        memcpy(dst, res, cnt * 4);
      }
      for (l = 0; l < (int)cnt; l++) {
        int64_t lo = tile_key(sub, wide, p->ranks[0], l), hi = tile_key(sub, wide, p->ranks[1], l);
        uint64_t e = e0 + s * (size_t)lanes + (size_t)l;
        if (floating(t) && mx[l] == nan_key(t))
          median_nan(p, t, j->rows, e, dst + (size_t)l * osize, sp->col);
        else if (t != DT_FLOAT32)
          median_store(t, odd, lo, hi, j->out, dst + (size_t)l * osize);
      }
    } else {
      double sum[LANES32];
      size_t keep = p->n - 2 * p->cut, r;
      if (t == DT_FLOAT32) {
        sum_lanes_f32(sub, p->cut, p->n - p->cut, sum);
      } else {
        for (l = 0; l < lanes; l++) sum[l] = 0;
        for (r = p->cut; r < p->n - p->cut; r++)
          for (l = 0; l < (int)cnt; l++) sum[l] += key_value(t, tile_key(sub, wide, r, l));
      }
      for (l = 0; l < (int)cnt; l++) mean_store(sum[l], keep, j->out, dst + (size_t)l * osize);
    }
  }
}

/* --- one element at a time (many rows) -------------------------------------- */

static void insertion_sort(int64_t *v, size_t n) {
  size_t i, j;
  for (i = 1; i < n; i++) {
    int64_t x = v[i];
    for (j = i; j > 0 && x < v[j - 1]; j--) v[j] = v[j - 1];
    v[j] = x;
  }
}

static void sift_down(int64_t *v, size_t root, size_t n) {
  for (;;) {
    size_t child = 2 * root + 1;
    int64_t t;
    if (child >= n) return;
    if (child + 1 < n && v[child] < v[child + 1]) child++;
    if (!(v[root] < v[child])) return;
    t = v[root];
    v[root] = v[child];
    v[child] = t;
    root = child;
  }
}

static void heap_sort(int64_t *v, size_t n) {
  size_t i;
  for (i = n / 2; i-- > 0;) sift_down(v, i, n);
  for (i = n; i-- > 1;) {
    int64_t t = v[0];
    v[0] = v[i];
    v[i] = t;
    sift_down(v, 0, i);
  }
}

/* Reorder v so that v[k] is the key of rank k, smaller ones before it and
** larger after (quickselect with a median-of-three pivot; heap sort if the
** partitions keep coming out lopsided). */
static void select_rank(int64_t *v, size_t n, size_t k) {
  size_t lo = 0, hi = n;
  int budget = 2 * 64;
  while (hi - lo > 16) {
    size_t mid = lo + (hi - lo) / 2, i, j;
    int64_t a = v[lo], b = v[mid], c = v[hi - 1], pivot;
    if (--budget < 0) {
      heap_sort(v + lo, hi - lo);
      return;
    }
    if (a < b)
      pivot = b < c ? b : (a < c ? c : a);
    else
      pivot = a < c ? a : (b < c ? c : b);
    i = lo;
    j = hi - 1;
    for (;;) {
      int64_t t;
      while (v[i] < pivot) i++;
      while (pivot < v[j]) j--;
      if (i >= j) break;
      t = v[i];
      v[i] = v[j];
      v[j] = t;
      i++;
      j--;
    }
    if (k <= j)
      hi = j + 1;
    else
      lo = j + 1;
  }
  insertion_sort(v + lo, hi - lo);
}

/* Elements e0 .. e0 + m, each selected on its own: their keys gathered a
** row at a time (m elements of each row in one run), then quickselect. */
static void run_columns(const os_job *j, const os_space *sp, uint64_t e0, size_t m) {
  const os_plan *p = j->p;
  dt_type t = j->t;
  size_t n = p->n, r, w, osize = dt_size(j->out), size = dt_size(t), keep = n - 2 * p->cut;
  int odd = (int)(n % 2);
  for (w = 0; w < m; w++) sp->max[w] = INT64_MIN;
  for (r = 0; r < n; r++) {
    const uchar *src = j->rows[r] + e0 * size;
    for (w = 0; w < m; w++) {
      int64_t k = key_of(t, src, w);
      sp->keys[w * n + r] = k;
      sp->max[w] = k > sp->max[w] ? k : sp->max[w];
    }
  }
  for (w = 0; w < m; w++) {
    int64_t *v = sp->keys + w * n;
    uchar *dst = j->dst + (e0 + w) * osize;
    if (p->op == OS_MEDIAN) {
      int64_t lo, hi;
      size_t i, k = p->ranks[1];
      select_rank(v, n, k);
      hi = v[k];
      lo = hi;
      if (!odd) /* rank k - 1: the largest of the smaller half */
        for (lo = v[0], i = 1; i < k; i++) lo = v[i] > lo ? v[i] : lo;
      if (floating(t) && sp->max[w] == nan_key(t))
        median_nan(p, t, j->rows, e0 + w, dst, sp->col);
      else
        median_store(t, odd, lo, hi, j->out, dst);
    } else {
      double sum = 0;
      size_t i;
      if (p->cut) {
        select_rank(v, n, p->cut);
        select_rank(v + p->cut, n - p->cut, keep - 1);
      }
      for (i = p->cut; i < p->cut + keep; i++) sum += key_value(t, v[i]);
      mean_store(sum, keep, j->out, dst);
    }
  }
}

/* --- threads ------------------------------------------------------------------ */

static size_t claim(size_t *next) { return __atomic_fetch_add(next, 1, __ATOMIC_RELAXED); }

static void os_part(void *ctx, uint64_t begin, uint64_t end, unsigned char *scratch) {
  os_job *j = ctx;
  const os_space *sp = &j->space[begin / j->unit];
  size_t c;
  (void)end;
  (void)scratch;
  while ((c = claim(&j->next)) < j->tiles) {
    uint64_t e0 = (uint64_t)c * j->span;
    size_t m = j->numel - e0 < j->span ? (size_t)(j->numel - e0) : j->span;
    if (j->p->net)
      run_tiles(j, sp, e0, m);
    else
      run_columns(j, sp, e0, m);
  }
}

int os_run(const os_plan *p, dt_type t, const unsigned char *const *rows, uint64_t numel, dt_type out, void *dst) {
  os_job j;
  size_t slices = (size_t)pool_threads(), s, lanes = wide_keys(t) ? LANES64 : LANES32, n = p->n;
  uint64_t bytes;
  int rc = CODEC_OK;
  if (!numel) return CODEC_OK;
  memset(&j, 0, sizeof j);
  j.p = p;
  j.t = t;
  j.out = out;
  j.rows = rows;
  j.numel = numel;
  j.dst = dst;
  if (p->net) {
    size_t sub = TILE_BYTES / (n * ROW_BYTES);
    if (sub < 1) sub = 1;
    if (sub > 16) sub = 16;
    j.span = sub * lanes;
    bytes = (uint64_t)sub * n * ROW_BYTES + ROW_BYTES + j.span * sizeof(int64_t);
  } else {
    size_t w = TILE_BYTES / (n * sizeof(int64_t));
    j.span = w < 1 ? 1 : w > 64 ? 64 : w;
    bytes = (uint64_t)j.span * n * sizeof(int64_t) + j.span * sizeof(int64_t);
  }
  bytes += (uint64_t)n * sizeof(nps_item) + 64;
  j.tiles = (size_t)((numel + j.span - 1) / j.span);
  if (slices < 1) slices = 1;
  if (slices > j.tiles) slices = j.tiles;
  /* The pool splits work of POOL_MIN_DEFAULT elements or more; an element
  ** here is worth about n / 8 elementwise ones. */
  j.unit = (uint64_t)((j.tiles + slices - 1) / slices) * j.span * (n / 8 + 1);
  if (!(j.space = codec_malloc((uint64_t)slices * sizeof(os_space)))) return CODEC_NOMEM;
  memset(j.space, 0, slices * sizeof(os_space));
  for (s = 0; s < slices && rc == CODEC_OK; s++) {
    uchar *raw = codec_malloc(bytes), *at;
    os_space *sp = &j.space[s];
    if (!raw) {
      rc = CODEC_NOMEM;
      break;
    }
    sp->raw = raw;
    if (p->net) {
      sp->tile = raw + (ROW_BYTES - (uintptr_t)raw % ROW_BYTES) % ROW_BYTES;
      at = sp->tile + j.span / lanes * n * ROW_BYTES;
    } else {
      sp->keys = (int64_t *)(void *)raw;
      at = raw + j.span * n * sizeof(int64_t);
    }
    sp->max = (int64_t *)(void *)at;
    sp->col = (nps_item *)(void *)(at + j.span * sizeof(int64_t));
  }
  if (rc == CODEC_OK) pool_run(j.unit * slices, j.unit, os_part, &j, NULL);
  for (s = 0; s < slices; s++) codec_free(j.space[s].raw);
  codec_free(j.space);
  return rc;
}
