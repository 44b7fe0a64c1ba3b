/* SPDX-License-Identifier: Apache-2.0 */
/*
** robust.h — the numeric parts of Byzantine-robust aggregation (Krum,
** MultiKrum, Bulyan) and of differential privacy (Gaussian noise from a
** portable, seedable generator), as Flower's strategies compute them
** (flwr/serverapp/strategy/multikrum.py, bulyan.py, strategy_utils.py,
** flwr/common/differential_privacy.py). No SQLite here.
*/
#ifndef AR_ROBUST_H
#define AR_ROBUST_H

#include <stddef.h>
#include <stdint.h>

#include "codec/dtype.h"
#include "math/kernels.h"

/* --- Krum ------------------------------------------------------------------ */

/* dist[i * n + j] (i < j) += sum over k < m of (x_i[k] - x_j[k])^2, in
** double, where x_i = cols + i * stride: one block's part of every pair's
** squared distance. Each pair's sum is taken in one fixed order (eight
** interleaved lanes, then a fixed tree; robust.c), whichever SIMD path runs,
** so the bits are the same on every CPU. CODEC_OK or CODEC_NOMEM. */
int rb_pair_sqdist(const double *cols, size_t n, size_t stride, size_t m, double *dist);

/* One array of every row for rb_sqdist_rows: row r's numel elements of
** type t (native byte order) start at rows[r] + at. */
typedef struct rb_seg {
  uint64_t at, numel;
  dt_type type;
} rb_seg;

/* dist[i * n + j] (i < j) += the squared distance of rows i and j over every
** segment: segments in order, each in blocks of `block` elements converted to
** double, each block's part added as rb_pair_sqdist adds it. The pairs are
** shared among the pool's threads (pool.h), each pair computed by one, so
** the bits depend neither on the CPU nor on the threads. Callers pass blocks
** of a few thousand elements in all rows (n * block doubles stay in L2).
** CODEC_OK or CODEC_NOMEM. */
int rb_sqdist_rows(const unsigned char *const *rows, size_t n, const rb_seg *segs, size_t nsegs, size_t block,
                   double *dist);

/* The SIMD path of rb_pair_sqdist, rb_sqdist_rows and rb_bulyan_block, for
** tests that compare them: RB_ISA_BASE (portable), RB_ISA_AVX2,
** RB_ISA_AVX512, or -1 for the best this CPU has (the default). A path the
** CPU lacks means the best. Returns the path now used. Not thread-safe: set
** it before the work. */
enum { RB_ISA_BASE = KN_ISA_BASE, RB_ISA_AVX2 = KN_ISA_AVX2, RB_ISA_AVX512 = KN_ISA_AVX512 };
int rb_set_isa(int isa);

/* Krum scores (Flower's select_multikrum): for each row, the sum of its
** max(1, n - f - 2) smallest squared distances to the other rows (NaN
** ordered last, as np.argsort; at most n - 1 of them). dist holds the upper
** triangle (i < j) of the n x n matrix. tmp holds n doubles. */
void rb_krum_scores(const double *dist, size_t n, size_t f, double *scores, double *tmp);

/* order[0..n) = 0..n-1 sorted by v ascending, NaN last, equal values in row
** order (a stable sort: what np.argsort gives for up to 16 values). */
void rb_argsort(const double *v, size_t n, size_t *order);

/* --- FedAvg in Flower's arithmetic ------------------------------------------ */

/* The result type of aggregate_arrayrecords for arrays of type t:
** value.numpy() * weight keeps floating and complex types, and makes bool
** and integer arrays float64. */
dt_type rb_fedavg_type(dt_type t);
/* One step of aggregate_arrayrecords over m elements: acc (type
** rb_fedavg_type(t), native order) = x * w when first, else acc + x * w,
** each operation rounded to that type as NumPy does (w rounded to the type
** first; float16 computed in float32 and rounded back). x is native. tmp
** holds 4 * m doubles. */
void rb_fedavg_step(dt_type t, const void *x, double w, void *acc, size_t m, int first, double *tmp);

/* --- Bulyan -------------------------------------------------------------- */

/* One coordinate of Bulyan's aggregate_n_closest_weights over the theta
** values v (reordered): the median (np.median, rounded to type t when t is
** floating), then the mean of the beta values closest to it. NaN when any
** value is NaN. 0 < beta <= theta. */
double rb_bulyan_coord(double *v, size_t theta, size_t beta, dt_type t);

/* out[j] = rb_bulyan_coord of the theta values cols[s * stride + j]
** (s < theta), for j < m, the same bits; a vector of coordinates at a time
** where their values are finite (robust.c says why that is the same). cols is not
** changed; tmp holds theta doubles. */
void rb_bulyan_block(const double *cols, size_t stride, size_t theta, size_t beta, dt_type t, size_t m, double *out,
                     double *tmp);

/* --- Combining the selected rows --------------------------------------- */

/* dst (type out, seg->numel elements) = the ns rows' elements of the
** segment combined: with weights, FedAvg (rb_fedavg_step, the rows in the
** order given, weights[s] for rows[s]; out must be rb_fedavg_type(t));
** without, Bulyan's rule with beta (rb_bulyan_block, rounded once to out).
** Blocks of `block` elements, shared among the pool's threads: every
** element's result depends on its own values alone, so the bits are the
** one-thread bits. CODEC_OK or CODEC_NOMEM. */
int rb_combine_rows(const unsigned char *const *rows, const double *weights, size_t ns, size_t beta, const rb_seg *seg,
                    dt_type out, void *dst, size_t block);

/* --- Gaussian noise ------------------------------------------------------ */

/* xoshiro256** (Blackman and Vigna, 2018) seeded by splitmix64 from a 64-bit
** seed; normals by Marsaglia's polar method, both values of a pair used.
** Uniforms are the top 53 bits of a draw times 2^-53. The logarithm is
** rb_log below, so the stream is the same bits on every IEEE-754 machine. */
typedef struct rb_rng {
  uint64_t s[4];
  double spare;
  int has_spare;
} rb_rng;

void rb_rng_seed(rb_rng *r, uint64_t seed);
uint64_t rb_rng_next(rb_rng *r);
double rb_rng_normal(rb_rng *r);

/* Natural logarithm of a positive finite x from +, -, *, / only (frexp for
** the exponent), so its bits do not depend on the C library: within 2 ulp. */
double rb_log(double x);

/* x[i] += (stddev * normal) cast to x's type, as Flower's
** add_gaussian_noise_inplace does (np.random.normal(...).astype(dtype)
** added in the array's type), for m native elements of floating type t;
** complex types get the noise on their real part (astype of a real array
** to complex). Other types are left alone. One normal per element. */
void rb_add_noise(dt_type t, void *x, size_t m, double stddev, rb_rng *r);

#endif
