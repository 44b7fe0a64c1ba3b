/* SPDX-License-Identifier: Apache-2.0 */
/*
** inspect.h — what a viewer shows of one array beyond am_reduce's numbers
** (ar_inspect): NaN and infinity counts with the finite range, NumPy's
** histogram of the finite elements, and a heatmap of cell means.
**
** Elements are read as float64 (bool as 0/1, integers rounded as NumPy's
** astype(float64)), a block at a time through am_iter; nothing is allocated
** beyond what the bins and the grid need.
**
** Histogram: np.histogram(x[np.isfinite(x)].astype(np.float64), bins), as
** NumPy 1.24 computes it: edges np.linspace(lo, hi, bins + 1) over the
** finite min and max (lo == hi widens to lo - 0.5, hi + 0.5), each element
** in bin int((x - lo) * (bins / (hi - lo))), moved down one when below its
** bin's left edge, up one when at or above the next edge (not in the last
** bin, which holds hi).
**
** Heatmap: the array as a matrix — 2-D as it is; 4-D (out, in, kh, kw)
** conv weights as a grid of kernels, element [o,i,y,x] at row o*kh+y,
** column i*kw+x; 3-D and more than 4-D as (shape[0], the product of the
** rest) — cut into cells of ceil(R/grid) rows and ceil(C/grid) columns
** (the last ones partial), each the mean of its finite elements.
*/
#ifndef AR_INSPECT_H
#define AR_INSPECT_H

#include "math/arraymath.h"

#define IN_MAX_BINS 1024
#define IN_MAX_GRID 256

/* One pass: counts and the finite range. */
typedef struct in_scan {
  uint64_t nan, posinf, neginf; /* complex: nan counts elements with a NaN part; no infinity counts */
  uint64_t finite;              /* finite elements (real arrays) */
  double lo, hi;                /* their min and max as float64, when finite > 0 */
} in_scan;

void in_scan_array(const npy_array *a, in_scan *s, unsigned char *scratch);

typedef struct in_hist {
  int bins;
  double lo, hi, norm; /* first and last edge; bins / (hi - lo) */
  double edges[IN_MAX_BINS + 1];
  uint64_t counts[IN_MAX_BINS];
} in_hist;

/* The bins over the finite range [lo, hi] (lo <= hi): 1, or 0 when the
** range is too wide or too narrow for float64 arithmetic (hi - lo, or
** bins over it, overflows), where NumPy's own answer is meaningless. */
int in_hist_plan(in_hist *h, int bins, double lo, double hi);

typedef struct in_heat {
  uint64_t rows, cols; /* the matrix */
  int kernels;         /* the 4-D layout */
  uint64_t rh, cw;     /* rows and columns per cell */
  uint64_t crows, ccols;
  /* the walk in C order: segments of kw elements that share a row and
  ** take consecutive columns, y over kh, i over in, o over out */
  uint64_t kh, kw, in;
  double *sum, *comp; /* per cell: compensated sum of the finite elements */
  uint64_t *count;    /* and their number */
} in_heat;

/* Plan a's heatmap (ndim >= 2, numel > 0, not complex) with at most grid x
** grid cells; allocates them. CODEC_OK or CODEC_NOMEM. */
int in_heat_plan(in_heat *m, const npy_array *a, int grid);
void in_heat_free(in_heat *m);
/* A cell's mean; NaN when it has no finite element. */
double in_heat_cell(const in_heat *m, uint64_t r, uint64_t c);

/* One pass over a (real) filling h's counts (h planned, or NULL) and m's
** cells (m planned, or NULL). */
void in_pass(const npy_array *a, in_hist *h, in_heat *m, unsigned char *scratch);

#endif
