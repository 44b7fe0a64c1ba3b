/* SPDX-License-Identifier: Apache-2.0 */
/*
** serveropt.c — Flower's server optimizer steps and the in-dtype weighted
** sum (see serveropt.h). Each line below names the NumPy expression it
** reproduces; the parenthesisation is NumPy's evaluation order.
*/
#include "math/serveropt.h"

/* The Makefile builds this file with -fno-math-errno (sqrt leaves errno
** alone; the results are the same), so the loops below vectorize; they are
** cloned for AVX2 as kernels.c's are (KN_HOT: same bits, no FMA, no
** reassociation). Static clones behind plain entry points, as there. */
#include <math.h>
#include <string.h>

#include "codec/dtype.h"
#include "math/kernels.h"

/* Elements are read and written with memcpy: arrays inside record BLOBs have
** no alignment (the compiler makes these plain unaligned vector moves). */
static inline float ld_f32(const void *p, size_t i) {
  float v;
  memcpy(&v, (const unsigned char *)p + i * 4, 4);
  return v;
}
static inline double ld_f64(const void *p, size_t i) {
  double v;
  memcpy(&v, (const unsigned char *)p + i * 8, 8);
  return v;
}
static inline void st_f32(void *p, size_t i, float v) { memcpy((unsigned char *)p + i * 4, &v, 4); }
static inline void st_f64(void *p, size_t i, double v) { memcpy((unsigned char *)p + i * 8, &v, 8); }

double so_adam_eta_norm(double eta, double beta_1, double beta_2, int64_t server_round) {
  /* eta * np.sqrt(1 - np.power(beta_2, server_round + 1.0))
  **     / (1 - np.power(beta_1, server_round + 1.0)) */
  double r = (double)server_round + 1.0;
  return eta * sqrt(1 - pow(beta_2, r)) / (1 - pow(beta_1, r));
}

int so_has_m(const so_params *p) { return p->strategy != SO_FEDAVGM || (p->server_opt && p->momentum > 0.0); }
int so_has_v(const so_params *p) { return p->strategy != SO_FEDAVGM; }

/* np.sign for floats: NaN stays NaN. */
#define SO_SIGN(T, x) ((x) > 0 ? (T)1 : (x) < 0 ? (T)-1 : (x) == 0 ? (T)0 : (x))

/* One FedOpt loop: MT, VT are the expressions of the new moments from d, mp
** (previous m) and vp (previous v); ETA the step size. Branch-free, so the
** compiler vectorizes it. */
#define SO_FEDOPT_LOOP(T, SQRT, MP, VP, VT)                                                                \
  for (i = 0; i < n; i++) {                                                                                \
    T d = LD(a, i) - LD(x, i);           /* delta_t = x - current_arrays */                                \
    T mt = (T)(b1 * (MP)) + (T)(c1 * d); /* beta_1 * v + (1 - beta_1) * delta_t */                         \
    T vp = (VP), d2 = d * d;             /* delta_t ** 2 is np.square */                                   \
    T vt = (VT);                                                                                           \
    ST(m_out, i, mt);                                                                                      \
    ST(v_out, i, vt);                                                                                      \
    ST(x_out, i, LD(x, i) + (T)((T)(eta * mt) / (T)(SQRT(vt) + tau))); /* x + eta * m / (sqrt(v) + tau) */ \
  }

/* FedAdam: beta_2 * v + (1 - beta_2) * delta_t**2; FedYogi: v - (1 - beta_2) *
** delta_t**2 * sign(v - delta_t**2); FedAdagrad: v + delta_t**2. */
#define SO_VT_ADAM(T) (T)(b2 * vp) + (T)(c2 * d2)
#define SO_VT_YOGI(T) vp - (T)((T)(c2 * d2) * SO_SIGN(T, (T)(vp - d2)))
#define SO_VT_ADAGRAD(T) vp + d2

#define SO_FEDOPT(T, SQRT, VT)                      \
  if (m && v) {                                     \
    SO_FEDOPT_LOOP(T, SQRT, LD(m, i), LD(v, i), VT) \
  } else if (m) {                                   \
    SO_FEDOPT_LOOP(T, SQRT, LD(m, i), zero, VT)     \
  } else if (v) {                                   \
    SO_FEDOPT_LOOP(T, SQRT, zero, LD(v, i), VT)     \
  } else {                                          \
    SO_FEDOPT_LOOP(T, SQRT, zero, zero, VT)         \
  }

#define SO_STEP(NAME, T, SQRT, LD, ST)                                                                     \
  KN_HOT static void NAME##_hot(const so_params *p, size_t n, const void *x, const void *a, const void *m, \
                                const void *v, void *x_out, void *m_out, void *v_out) {                    \
    size_t i;                                                                                              \
    if (p->strategy == SO_FEDAVGM) {                                                                       \
      const T lr = (T)p->lr, mom = (T)p->momentum;                                                         \
      if (!p->server_opt) { /* aggregate_train returns FedAvg's aggregate as is */                         \
        for (i = 0; i < n; i++) ST(x_out, i, LD(a, i));                                                    \
      } else if (p->momentum > 0.0) {                                                                      \
        for (i = 0; i < n; i++) {                                                                          \
          T pg = LD(x, i) - LD(a, i);               /* old - new */                                        \
          T mv = m ? (T)(mom * LD(m, i)) + pg : pg; /* server_momentum * mv + pg; first: pg */             \
          ST(m_out, i, mv);                                                                                \
          ST(x_out, i, LD(x, i) - (T)(lr * mv)); /* old - server_learning_rate * pg */                     \
        }                                                                                                  \
      } else {                                                                                             \
        for (i = 0; i < n; i++) {                                                                          \
          T pg = LD(x, i) - LD(a, i);                                                                      \
          ST(x_out, i, LD(x, i) - (T)(lr * pg));                                                           \
        }                                                                                                  \
      }                                                                                                    \
      return;                                                                                              \
    }                                                                                                      \
    {                                                                                                      \
      /* FedOpt._compute_deltat_and_mt, then each strategy's v_t and update */                             \
      const T b1 = (T)p->beta_1, c1 = (T)(1 - p->beta_1), b2 = (T)p->beta_2, c2 = (T)(1 - p->beta_2);      \
      const T tau = (T)p->tau, eta = (T)(p->strategy == SO_FEDADAM ? p->eta_norm : p->eta);                \
      const T zero = 0;                                                                                    \
      if (p->strategy == SO_FEDADAM) {                                                                     \
        SO_FEDOPT(T, SQRT, SO_VT_ADAM(T))                                                                  \
      } else if (p->strategy == SO_FEDYOGI) {                                                              \
        SO_FEDOPT(T, SQRT, SO_VT_YOGI(T))                                                                  \
      } else {                                                                                             \
        (void)b2;                                                                                          \
        (void)c2;                                                                                          \
        SO_FEDOPT(T, SQRT, SO_VT_ADAGRAD(T))                                                               \
      }                                                                                                    \
    }                                                                                                      \
  }

#define LD ld_f32
#define ST st_f32
SO_STEP(so_step_f32, float, sqrtf, ld_f32, st_f32)
#undef LD
#undef ST
#define LD ld_f64
#define ST st_f64
SO_STEP(so_step_f64, double, sqrt, ld_f64, st_f64)
#undef LD
#undef ST

/* ---- one dtype mix: computed in double, each intermediate rounded ---- */

/* v rounded to float32 when f (the dtype NumPy gives that intermediate). */
#define SO_R(f, v) ((f) ? (double)(float)(v) : (v))

static inline double ld_t(const void *p, int f32, size_t i) { return f32 ? (double)ld_f32(p, i) : ld_f64(p, i); }
static inline void st_t(void *p, int f32, size_t i, double v) {
  if (f32)
    st_f32(p, i, (float)v);
  else
    st_f64(p, i, v);
}

void so_result_types(const so_params *p, const so_types *in, int has_m, int has_v, so_types *out) {
  out->a = in->a;
  if (p->strategy == SO_FEDAVGM) {
    unsigned char pg = in->x & in->a, mv = has_m ? (unsigned char)(in->m & pg) : pg;
    if (!p->server_opt) {
      out->x = in->a; /* the aggregate as is */
      out->m = out->v = 0;
    } else if (p->momentum > 0.0) {
      out->m = mv;
      out->x = in->x & mv;
      out->v = 0;
    } else {
      out->x = in->x & pg;
      out->m = out->v = 0;
    }
    return;
  }
  {
    unsigned char d = in->x & in->a;              /* delta_t = aggregate - current */
    unsigned char m0 = has_m ? in->m : in->a;     /* m_t before: zeros_like(aggregate) */
    unsigned char v0 = has_v ? in->v : in->a;     /* v_t likewise */
    unsigned char e = p->strong_eta ? 0 : m0 & d; /* eta * m_t */
    out->m = m0 & d;
    out->v = v0 & d;
    out->x = in->x & e & out->v; /* x + eta * m_t / (sqrt(v_t) + tau) */
  }
}

static void so_step_mixed(const so_params *p, const so_types *t, size_t n, const void *x, const void *a, const void *m,
                          const void *v, void *x_out, void *m_out, void *v_out) {
  so_types o;
  size_t i;
  so_result_types(p, t, m != NULL, v != NULL, &o);
  if (p->strategy == SO_FEDAVGM) {
    const int fpg = t->x & t->a, fm = m ? t->m : 0;
    const double lr = SO_R(o.m, p->lr), mom = SO_R(fm, p->momentum); /* lr * mv, momentum * mv */
    if (!p->server_opt) {
      for (i = 0; i < n; i++) st_t(x_out, o.x, i, ld_t(a, t->a, i));
    } else if (p->momentum > 0.0) {
      for (i = 0; i < n; i++) {
        double xv = ld_t(x, t->x, i), pg = SO_R(fpg, xv - ld_t(a, t->a, i)); /* old - new */
        double mv = m ? SO_R(o.m, SO_R(fm, mom * ld_t(m, t->m, i)) + pg) : pg;
        st_t(m_out, o.m, i, mv);
        st_t(x_out, o.x, i, xv - SO_R(o.m, lr * mv));
      }
    } else {
      const double lr1 = SO_R(fpg, p->lr);
      for (i = 0; i < n; i++) {
        double xv = ld_t(x, t->x, i), pg = SO_R(fpg, xv - ld_t(a, t->a, i));
        st_t(x_out, o.x, i, xv - SO_R(fpg, lr1 * pg));
      }
    }
    return;
  }
  {
    const int fd = t->x & t->a, fm0 = m ? t->m : t->a, fv0 = v ? t->v : t->a, fe = p->strong_eta ? 0 : o.m;
    const double b1 = SO_R(fm0, p->beta_1), c1 = SO_R(fd, 1 - p->beta_1), b2 = SO_R(fv0, p->beta_2),
                 c2 = SO_R(fd, 1 - p->beta_2), tau = SO_R(o.v, p->tau),
                 eta = SO_R(fe, p->strategy == SO_FEDADAM ? p->eta_norm : p->eta);
    for (i = 0; i < n; i++) {
      double xv = ld_t(x, t->x, i), d = SO_R(fd, ld_t(a, t->a, i) - xv);
      double mp = m ? ld_t(m, t->m, i) : 0, vp = v ? ld_t(v, t->v, i) : 0;
      double mt = SO_R(o.m, SO_R(fm0, b1 * mp) + SO_R(fd, c1 * d));
      double d2 = SO_R(fd, d * d), vt;
      if (p->strategy == SO_FEDADAM) {
        vt = SO_R(o.v, SO_R(fv0, b2 * vp) + SO_R(fd, c2 * d2));
      } else if (p->strategy == SO_FEDYOGI) {
        double diff = SO_R(o.v, vp - d2);
        vt = SO_R(o.v, vp - SO_R(o.v, SO_R(fd, c2 * d2) * SO_SIGN(double, diff)));
      } else {
        vt = SO_R(o.v, vp + d2);
      }
      st_t(m_out, o.m, i, mt);
      st_t(v_out, o.v, i, vt);
      st_t(x_out, o.x, i, xv + SO_R(fe & o.v, SO_R(fe, eta * mt) / SO_R(o.v, SO_R(o.v, sqrt(vt)) + tau)));
    }
  }
}

void so_step(const so_params *p, const so_types *t, size_t n, const void *x, const void *a, const void *m,
             const void *v, void *x_out, void *m_out, void *v_out) {
  int same = t->a == t->x && (!m || t->m == t->x) && (!v || t->v == t->x);
  if (same && !t->x) /* float64 throughout: eta_norm is float64 either way */
    so_step_f64_hot(p, n, x, a, m, v, x_out, m_out, v_out);
  else if (same && !p->strong_eta)
    so_step_f32_hot(p, n, x, a, m, v, x_out, m_out, v_out);
  else
    so_step_mixed(p, t, n, x, a, m, v, x_out, m_out, v_out);
}

/* value * w with w cast to the dtype (value-based casting), then acc + that. */
void so_wsum_f32(size_t n, const void *v, double w, void *acc, int first) {
  const float wf = (float)w;
  size_t i;
  if (first)
    for (i = 0; i < n; i++) st_f32(acc, i, ld_f32(v, i) * wf);
  else
    for (i = 0; i < n; i++) st_f32(acc, i, ld_f32(acc, i) + (float)(ld_f32(v, i) * wf));
}

void so_wsum_f64(size_t n, const void *v, double w, void *acc, int first) {
  size_t i;
  if (first)
    for (i = 0; i < n; i++) st_f64(acc, i, ld_f64(v, i) * w);
  else
    for (i = 0; i < n; i++) st_f64(acc, i, ld_f64(acc, i) + (double)(ld_f64(v, i) * w));
}

/* NumPy computes a half operation in float and rounds the result to half;
** float carries more than twice half's precision plus two bits, so this is
** the correctly rounded half result. */
static float h2f(uint16_t h) { return (float)dt_half_to_double(h); }

void so_wsum_f16(size_t n, const void *v, double w, void *acc, int first) {
  const float wf = h2f(dt_double_to_half(w));
  unsigned char *out = acc;
  const unsigned char *in = v;
  size_t i;
  for (i = 0; i < n; i++) {
    uint16_t x, a, prod;
    memcpy(&x, in + 2 * i, 2);
    prod = dt_double_to_half((double)(h2f(x) * wf));
    if (!first) {
      memcpy(&a, out + 2 * i, 2);
      prod = dt_double_to_half((double)(h2f(a) + h2f(prod)));
    }
    memcpy(out + 2 * i, &prod, 2);
  }
}
