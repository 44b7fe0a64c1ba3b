/* SPDX-License-Identifier: Apache-2.0 */
/*
** inspect.c — counts, histogram and heatmap passes over one array (see
** inspect.h). Scratch: slot 0 for am_iter's copies, slot 1 for a block as
** float64 (or complex pairs).
*/
#include "math/inspect.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define SLOT ((size_t)KN_BLOCK * 16)

/* A block of n elements as float64: in place when they already are (and
** aligned: a .npy payload need not be, in a record). */
static const double *block_f64(dt_type t, const unsigned char *p, size_t n, unsigned char *buf) {
  if (t == DT_FLOAT64 && (uintptr_t)p % sizeof(double) == 0) return (const double *)(const void *)p;
  kn_to_f64(t, p, buf, n);
  return (const double *)(const void *)buf;
}

void in_scan_array(const npy_array *a, in_scan *s, unsigned char *scratch) {
  dt_type t = a->dtype.type;
  int cplx = dt_kind(t) == DT_KIND_COMPLEX;
  double lo = INFINITY, hi = -INFINITY;
  uint64_t pos, finite = 0, nan = 0, posinf = 0, neginf = 0;
  am_iter it;
  memset(s, 0, sizeof(*s));
  am_iter_init(&it, a, am_is_fortran(a), 1);
  for (pos = 0; pos < a->numel;) {
    size_t m = a->numel - pos < KN_BLOCK ? (size_t)(a->numel - pos) : KN_BLOCK, j;
    const unsigned char *p = am_iter_next(&it, m, scratch);
    pos += m;
    if (cplx) {
      double *z = (double *)(void *)(scratch + SLOT);
      kn_to_c128(t, p, z, m);
      for (j = 0; j < m; j++) nan += z[2 * j] != z[2 * j] || z[2 * j + 1] != z[2 * j + 1];
      continue;
    }
    {
      const double *x = block_f64(t, p, m, scratch + SLOT);
      for (j = 0; j < m; j++) {
        double v = x[j];
        if (v - v == 0) { /* finite */
          lo = v < lo ? v : lo;
          hi = v > hi ? v : hi;
          finite++;
        } else if (v != v) {
          nan++;
        } else if (v > 0) {
          posinf++;
        } else {
          neginf++;
        }
      }
    }
  }
  s->nan = nan;
  s->posinf = posinf;
  s->neginf = neginf;
  s->finite = finite;
  s->lo = lo;
  s->hi = hi;
}

int in_hist_plan(in_hist *h, int bins, double lo, double hi) {
  double delta, step;
  int i;
  if (lo == hi) { /* NumPy's _get_outer_edges */
    lo -= 0.5;
    hi += 0.5;
  }
  delta = hi - lo;
  h->bins = bins;
  h->lo = lo;
  h->hi = hi;
  h->norm = bins / delta;
  if (!isfinite(delta) || !isfinite(h->norm)) return 0;
  /* np.linspace(lo, hi, bins + 1): i * step + lo, the last edge hi */
  step = delta / bins;
  for (i = 0; i <= bins; i++) h->edges[i] = step == 0 ? (double)i / bins * delta + lo : (double)i * step + lo;
  h->edges[bins] = hi;
  memset(h->counts, 0, sizeof(h->counts));
  return 1;
}

int in_heat_plan(in_heat *m, const npy_array *a, int grid) {
  const int64_t *s = a->shape;
  uint64_t cells;
  memset(m, 0, sizeof(*m));
  m->kh = 1;
  m->in = 1;
  if (a->ndim == 4) {
    m->kernels = 1;
    m->rows = (uint64_t)s[0] * (uint64_t)s[2];
    m->cols = (uint64_t)s[1] * (uint64_t)s[3];
    if (s[2] == 1) { /* rows of whole (in, kw) spans: one segment each */
      m->kw = m->cols;
    } else {
      m->kh = (uint64_t)s[2];
      m->kw = (uint64_t)s[3];
      m->in = (uint64_t)s[1];
    }
  } else {
    m->rows = (uint64_t)s[0];
    m->cols = a->numel / (uint64_t)s[0];
    m->kw = m->cols;
  }
  m->rh = (m->rows - 1) / (uint64_t)grid + 1;
  m->cw = (m->cols - 1) / (uint64_t)grid + 1;
  m->crows = (m->rows - 1) / m->rh + 1;
  m->ccols = (m->cols - 1) / m->cw + 1;
  cells = m->crows * m->ccols; /* at most grid * grid */
  m->sum = codec_malloc(cells * (2 * sizeof(double) + sizeof(uint64_t)));
  if (!m->sum) return CODEC_NOMEM;
  memset(m->sum, 0, (size_t)cells * (2 * sizeof(double) + sizeof(uint64_t)));
  m->comp = m->sum + cells;
  m->count = (uint64_t *)(void *)(m->comp + cells);
  return CODEC_OK;
}

void in_heat_free(in_heat *m) {
  codec_free(m->sum);
  m->sum = m->comp = NULL;
  m->count = NULL;
}

double in_heat_cell(const in_heat *m, uint64_t r, uint64_t c) {
  uint64_t k = r * m->ccols + c;
  return m->count[k] ? (m->sum[k] + m->comp[k]) / (double)m->count[k] : NAN;
}

/* The histogram bin of a finite v in [h->lo, h->hi], as NumPy finds it. */
static inline size_t hist_bin(const in_hist *h, double v) {
  size_t i = (size_t)((v - h->lo) * h->norm);
  size_t last = (size_t)h->bins - 1;
  i -= i > last; /* v == hi, or just below it by rounding */
  i -= v < h->edges[i];
  i += (v >= h->edges[i + 1]) & (i != last);
  return i;
}

static void hist_block(in_hist *h, const double *x, size_t n) {
  size_t j;
  for (j = 0; j < n; j++) {
    double v = x[j];
    int fin = v - v == 0;
    h->counts[hist_bin(h, fin ? v : h->lo)] += (uint64_t)fin;
  }
}

/* Where the C-order walk over the matrix is. */
typedef struct walk {
  uint64_t seg_left;      /* elements left in the current segment */
  uint64_t cr, rleft;     /* cell row, and its rows left (counting the current one) */
  uint64_t cr_o, rleft_o; /* the same at the first row of the current out index */
  uint64_t cc, cleft;     /* cell column, and its columns left */
  uint64_t cc_i, cleft_i; /* the same at the current segment's first column */
  uint64_t y, i;
} walk;

static void move_columns(uint64_t *cc, uint64_t *cleft, uint64_t k, uint64_t cw) {
  if (k < *cleft) {
    *cleft -= k;
  } else {
    k -= *cleft;
    *cc += 1 + k / cw;
    *cleft = cw - k % cw;
  }
}

static void next_row(walk *w, uint64_t rh) {
  if (--w->rleft == 0) {
    w->cr++;
    w->rleft = rh;
  }
}

/* The segment ended: on to the next (y, then i, then o). */
static void next_segment(walk *w, const in_heat *m) {
  if (++w->y < m->kh) {
    next_row(w, m->rh);
  } else {
    w->y = 0;
    if (++w->i < m->in) { /* the next kernel of the same rows */
      w->cr = w->cr_o;
      w->rleft = w->rleft_o;
      move_columns(&w->cc_i, &w->cleft_i, m->kw, m->cw);
    } else {
      w->i = 0;
      next_row(w, m->rh);
      w->cr_o = w->cr;
      w->rleft_o = w->rleft;
      w->cc_i = 0;
      w->cleft_i = m->cw;
    }
  }
  w->cc = w->cc_i;
  w->cleft = w->cleft_i;
  w->seg_left = m->kw;
}

/* Add a run of k elements to one cell (and the histogram). */
static void heat_run(in_heat *m, in_hist *h, uint64_t cell, const double *x, size_t k) {
  double s = 0, t, sum = m->sum[cell];
  uint64_t c = 0;
  size_t j;
  if (h) {
    for (j = 0; j < k; j++) {
      double v = x[j];
      int fin = v - v == 0;
      h->counts[hist_bin(h, fin ? v : h->lo)] += (uint64_t)fin;
      s += fin ? v : 0;
      c += (uint64_t)fin;
    }
  } else {
    for (j = 0; j < k; j++) {
      double v = x[j];
      int fin = v - v == 0;
      s += fin ? v : 0;
      c += (uint64_t)fin;
    }
  }
  /* Neumaier: the cell's sum stays exact to a few ulps over many runs */
  t = sum + s;
  m->comp[cell] += fabs(sum) >= fabs(s) ? (sum - t) + s : (s - t) + sum;
  m->sum[cell] = t;
  m->count[cell] += c;
}

static void heat_block(in_heat *m, in_hist *h, walk *w, const double *x, size_t n) {
  while (n > 0) {
    uint64_t k = n;
    if (w->seg_left < k) k = w->seg_left;
    if (w->cleft < k) k = w->cleft;
    heat_run(m, h, w->cr * m->ccols + w->cc, x, (size_t)k);
    x += k;
    n -= (size_t)k;
    w->seg_left -= k;
    if ((w->cleft -= k) == 0) {
      w->cc++;
      w->cleft = m->cw;
    }
    if (w->seg_left == 0) next_segment(w, m);
  }
}

void in_pass(const npy_array *a, in_hist *h, in_heat *m, unsigned char *scratch) {
  dt_type t = a->dtype.type;
  uint64_t pos;
  am_iter it;
  walk w;
  if (m) {
    memset(&w, 0, sizeof(w));
    w.seg_left = m->kw;
    w.rleft = w.rleft_o = m->rh;
    w.cleft = w.cleft_i = m->cw;
  }
  /* The heatmap needs C order; the histogram takes any. */
  am_iter_init(&it, a, m ? 0 : am_is_fortran(a), 1);
  for (pos = 0; pos < a->numel;) {
    size_t n = a->numel - pos < KN_BLOCK ? (size_t)(a->numel - pos) : KN_BLOCK;
    const double *x = block_f64(t, am_iter_next(&it, n, scratch), n, scratch + SLOT);
    pos += n;
    if (m)
      heat_block(m, h, &w, x, n);
    else
      hist_block(h, x, n);
  }
}
