/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_strategy.c — Flower's strategies over RecordDicts, replayable in SQL:
**
**   aggregate rd_mean(content [, weighting_key])   -- FedAvg.aggregate_train
**   ar_server_step(strategy, state, aggregate, server_round [, options])
**                                     -- FedAvgM / FedAdam / FedYogi / FedAdagrad
**
** rd_mean returns the RecordDict {array record name: aggregate_arrayrecords,
** metric record name: aggregate_metricrecords} of the replies, computed with
** strategy_utils.py's arithmetic (weight factors w / sum(w), sums in the
** arrays' dtype in reply order). Those factors need the total weight before
** the first product, so rd_mean keeps every reply until the end (at most
** SQLITE_LIMIT_LENGTH bytes of them), as ar_median keeps rows.
**
** ar_server_step is one aggregate_train step of a server optimizer: state is
** a RecordDict holding the global model as ArrayRecord 'arrays' and the
** optimizer's arrays under Flower's attribute names ('m_t', 'v_t' for the
** FedOpt family, 'momentum_vector' for FedAvgM; absent before the first
** step); the result is the next state. Arithmetic: math/serveropt.h.
*/
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "codec/array.h"
#include "codec/pb.h"
#include "codec/recorddict.h"
#include "codec/valrec.h"
#include "math/arraymath.h"
#include "math/pool.h"
#include "math/serveropt.h"

static const char *quote(char *q, codec_span s) { return codec_quote(q, CODEC_QUOTE_MAX, s.p, s.n); }

static int span_eq(codec_span a, codec_span b) {
  return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, (size_t)a.n) == 0);
}

static codec_span cstr_span(const char *s) {
  codec_span sp;
  sp.p = (const unsigned char *)s;
  sp.n = strlen(s);
  return sp;
}

/* ========================================================================== */
/* ar_server_step                                                             */
/* ========================================================================== */

typedef struct strategy_def {
  const char *name;
  int code;
  const char *const *options; /* NULL-terminated */
  double defaults[7];         /* in the order of options */
} strategy_def;

/* Flower's parameters, then `numpy`: the NumPy major version whose
** promotion rules the step follows (2, the default, or 1). */
static const char *const avg_opts[] = {"numpy", NULL};
static const char *const avgm_opts[] = {"server_learning_rate", "server_momentum", "numpy", NULL};
static const char *const adam_opts[] = {"eta", "eta_l", "beta_1", "beta_2", "tau", "numpy", NULL};
static const char *const adagrad_opts[] = {"eta", "eta_l", "tau", "numpy", NULL};

/* Flower's constructor defaults (fedavgm.py, fedadam.py, fedyogi.py, fedadagrad.py). */
static const strategy_def strategies[] = {
    {"fedavg", SO_FEDAVGM, avg_opts, {2}}, /* FedAvgM without server optimization */
    {"fedavgm", SO_FEDAVGM, avgm_opts, {1.0, 0.0, 2}},
    {"fedadam", SO_FEDADAM, adam_opts, {1e-1, 1e-1, 0.9, 0.99, 1e-3, 2}},
    {"fedyogi", SO_FEDYOGI, adam_opts, {1e-2, 0.0316, 0.9, 0.99, 1e-3, 2}},
    {"fedadagrad", SO_FEDADAGRAD, adagrad_opts, {1e-1, 1e-1, 1e-3, 2}},
};

static int opt_index(const strategy_def *s, codec_span name) {
  int i;
  for (i = 0; s->options[i]; i++)
    if (span_eq(name, cstr_span(s->options[i]))) return i;
  return -1;
}

/* The options JSON object into values[] (defaults first). 1, or 0 after an error. */
static int read_options(sqlite3_context *ctx, const strategy_def *s, const char *json, uint64_t n, double *values) {
  buf_t mr;
  valrec_t vr;
  codec_err err;
  char q[CODEC_QUOTE_MAX];
  int rc, i, ok = 0;
  buf_init(&mr, UINT64_MAX);
  valrec_init(&vr);
  /* A MetricRecord's JSON reading types and checks the numbers for us. */
  if ((rc = valrec_from_json(&mr, 0, (const unsigned char *)json, n, "options", &err)) != CODEC_OK) {
    sql_codec_error(ctx, rc, &err);
    goto done;
  }
  if ((rc = valrec_parse(&vr, 0, mr.p ? mr.p : (const unsigned char *)"", 0, mr.n, "options", &err)) != CODEC_OK) {
    sql_codec_error(ctx, rc, &err);
    goto done;
  }
  for (i = 0; i < vr.n; i++) {
    const valrec_item *it = &vr.items[i];
    int k = opt_index(s, it->key);
    double d;
    if (k < 0) {
      char names[128] = ""; /* every strategy's option names fit */
      int j;
      for (j = 0; s->options[j]; j++) {
        if (j) strcat(names, ", ");
        strcat(names, s->options[j]);
      }
      sql_error(ctx, "unknown option '%s' for %s (options: %s)", quote(q, it->key), s->name, j ? names : "none");
      goto done;
    }
    if (it->type == VALREC_DOUBLE)
      d = it->v.d;
    else if (it->type == VALREC_SINT64)
      d = (double)it->v.i;
    else if (it->type == VALREC_UINT64)
      d = (double)it->v.u;
    else {
      sql_error(ctx, "option '%s' must be a number", s->options[k]);
      goto done;
    }
    if (!isfinite(d)) {
      sql_error(ctx, "option '%s' must be finite, got %g", s->options[k], d);
      goto done;
    }
    values[k] = d;
  }
  ok = 1;
done:
  valrec_clear(&vr);
  buf_free(&mr);
  return ok;
}

/* One key's arrays and where its results go. */
typedef struct step_key {
  npy_array x, a, m, v; /* m, v: numel 0 and data NULL when absent */
  int has_m, has_v;
  so_types t, o;    /* the inputs' and the results' dtypes (1: float32) */
  npy_array res[3]; /* the new model, m, v */
  unsigned char *dst[3];
} step_key;

typedef struct step_run {
  const so_params *p;
  const step_key *k;
} step_run;

#define SZ(f32) ((uint64_t)((f32) ? 4 : 8))
#define AT(arr, off, f32) ((arr) ? (const void *)((arr) + (off)*SZ(f32)) : NULL)
#define OUT(k, slot, off, f32) ((k)->dst[slot] ? (void *)((k)->dst[slot] + (off)*SZ(f32)) : NULL)

/* Elements [b, e) of a key whose inputs are all read in place. */
static void step_part(void *vctx, uint64_t b, uint64_t e, unsigned char *scratch) {
  const step_run *r = vctx;
  const step_key *k = r->k;
  const unsigned char *m = k->has_m ? k->m.data : NULL, *v = k->has_v ? k->v.data : NULL;
  (void)scratch;
  so_step(r->p, &k->t, (size_t)(e - b), AT(k->x.data, b, k->t.x), AT(k->a.data, b, k->t.a), AT(m, b, k->t.m),
          AT(v, b, k->t.v), OUT(k, 0, b, k->o.x), OUT(k, 1, b, k->o.m), OUT(k, 2, b, k->o.v));
}

static void step_key_run(const so_params *p, const step_key *k, unsigned char *scratch) {
  step_run r;
  am_iter it[4];
  const npy_array *in[4];
  int j, n_in = 2 + k->has_m + k->has_v, direct = 1, fortran = k->res[0].fortran_order;
  uint64_t pos, numel = k->res[0].numel;
  r.p = p;
  r.k = k;
  in[0] = &k->x;
  in[1] = &k->a;
  j = 2;
  if (k->has_m) in[j++] = &k->m;
  if (k->has_v) in[j++] = &k->v;
  for (j = 0; j < n_in; j++) {
    am_iter_init(&it[j], in[j], fortran, 1);
    direct &= am_iter_in_place(&it[j]);
  }
  if (direct) {
    pool_run(numel, 16, step_part, &r, scratch);
    return;
  }
  /* Another byte order or memory order somewhere: blocks through scratch. */
  for (pos = 0; pos < numel; pos += KN_BLOCK) {
    size_t n = numel - pos < KN_BLOCK ? (size_t)(numel - pos) : KN_BLOCK;
    const void *ptr[4] = {NULL, NULL, NULL, NULL};
    const void *m, *v;
    for (j = 0; j < n_in; j++) ptr[j] = am_iter_next(&it[j], n, scratch + (size_t)j * KN_BLOCK * 16);
    m = k->has_m ? ptr[2] : NULL;
    v = k->has_v ? ptr[2 + k->has_m] : NULL;
    so_step(p, &k->t, n, ptr[0], ptr[1], m, v, OUT(k, 0, pos, k->o.x), OUT(k, 1, pos, k->o.m), OUT(k, 2, pos, k->o.v));
  }
}

/* Integer and bool arrays, as Flower's NumPy arithmetic meets them: every
** expression of a step combines an array with a float array or a Python
** float, so NumPy 2 casts the integers to the float dtype of the operation
** (np.result_type: float64 for 32- and 64-bit integers, float32 for
** smaller ones and bool, against a float32 or float64 array). The array is
** cast once, up front, to that float dtype into a buffer of its own (listed
** in *owned, freed by the caller); the step then sees a float array. A
** float dtype is left as it is. 1, or 0 after an error. */
static int float_view(sqlite3_context *ctx, npy_array *a, unsigned char *scratch, unsigned char **owned, int *nowned,
                      codec_span key, const char *what) {
  char k = dt_kind((dt_type)a->dtype.type), q[CODEC_QUOTE_MAX];
  dt_type t = (dt_type)a->dtype.type;
  npy_array res;
  unsigned char *dst;
  codec_err err;
  if (k != DT_KIND_INT && k != DT_KIND_UINT && k != DT_KIND_BOOL) return 1;
  am_cast_plan(a, dt_native(k != DT_KIND_BOOL && dt_size(t) >= 4 ? DT_FLOAT64 : DT_FLOAT32), &res);
  if (!(dst = codec_malloc(res.nbytes ? res.nbytes : 1))) {
    sqlite3_result_error_nomem(ctx);
    return 0;
  }
  owned[(*nowned)++] = dst;
  if (am_cast_run(a, &res, dst, scratch, &err) != CODEC_OK) {
    sql_error(ctx, "key '%s' of %s: %s", quote(q, key), what, err.msg);
    return 0;
  }
  res.data = dst;
  *a = res;
  return 1;
}

/* Open every array of a record. */
static int open_all(sqlite3_context *ctx, const record_t *rec, npy_array *arrays, const char *what,
                    unsigned char *scratch, unsigned char **owned, int *nowned) {
  codec_err err;
  int i, rc;
  for (i = 0; i < rec->n; i++) {
    if ((rc = array_open(&rec->items[i], i, &arrays[i], &err)) != CODEC_OK) {
      if (rc == CODEC_NOMEM)
        sqlite3_result_error_nomem(ctx);
      else
        sql_error(ctx, "%s: %s", what, err.msg);
      return 0;
    }
    if (!float_view(ctx, &arrays[i], scratch, owned, nowned, rec->items[i].key, what)) return 0;
  }
  return 1;
}

/* A state's ArrayRecord by name, parsed: 1 found, 0 absent, -1 error. */
static int state_record(sqlite3_context *ctx, const recorddict_t *rd, const char *name, record_t *rec) {
  codec_err err;
  char label[64];
  int i = recorddict_find(rd, name, strlen(name)), rc;
  if (i < 0) return 0;
  if (rd->items[i].kind != RECORDDICT_ARRAY) {
    sql_error(ctx, "state item '%s' is a %s record, not an ArrayRecord", name, recorddict_kind_name(rd->items[i].kind));
    return -1;
  }
  if ((rc = record_parse(rec, rd->items[i].record.p, rd->items[i].record.n, &err)) != CODEC_OK) {
    if (rc == CODEC_NOMEM) {
      sqlite3_result_error_nomem(ctx);
    } else {
      snprintf(label, sizeof(label), "state '%s'", name);
      sql_error(ctx, "%s: %s", label, err.msg);
    }
    return -1;
  }
  return 1;
}

/* Does array b (key `key` of `what`) fit the model's array x: float32 or
** float64 (NumPy promotes a mix), the same shape? */
static int same_layout(sqlite3_context *ctx, const npy_array *x, const npy_array *b, codec_span key, const char *what) {
  char q[CODEC_QUOTE_MAX], s1[80], s2[80];
  if (b->dtype.type != DT_FLOAT32 && b->dtype.type != DT_FLOAT64) {
    sql_error(ctx, "key '%s' has dtype %s in %s; the arrays must be float32, float64, integer or bool", quote(q, key),
              dt_type_name((dt_type)b->dtype.type), what);
    return 0;
  }
  if (b->ndim != x->ndim || memcmp(b->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim)) {
    sql_error(ctx, "key '%s' has shape %s in %s but %s in the state's 'arrays'", quote(q, key),
              am_shape_str(s1, sizeof(s1), b->ndim, b->shape), what, am_shape_str(s2, sizeof(s2), x->ndim, x->shape));
    return 0;
  }
  return 1;
}

/* The arrays of `rec` (named `what`) matched to the model's keys into
** out[] (slot `slot` of each step_key). 1, or 0 after an error. */
static int match_keys(sqlite3_context *ctx, const record_t *model, step_key *keys, const record_t *rec,
                      const npy_array *arrays, int slot, const char *what) {
  char q[CODEC_QUOTE_MAX];
  int i, j;
  for (i = 0; i < model->n; i++) {
    npy_array *dst = slot == 1 ? &keys[i].a : slot == 2 ? &keys[i].m : &keys[i].v;
    j = record_find(rec, model->items[i].key.p, model->items[i].key.n);
    if (j < 0) {
      sql_error(ctx, "key '%s' of the state's 'arrays' is missing from %s", quote(q, model->items[i].key), what);
      return 0;
    }
    if (!same_layout(ctx, &keys[i].x, &arrays[j], model->items[i].key, what)) return 0;
    *dst = arrays[j];
  }
  for (j = 0; j < rec->n; j++) {
    if (record_find(model, rec->items[j].key.p, rec->items[j].key.n) < 0) {
      sql_error(ctx, "key '%s' is in %s but not in the state's 'arrays'", quote(q, rec->items[j].key), what);
      return 0;
    }
  }
  return 1;
}

static void server_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const strategy_def *s = NULL;
  const char *sname, *json;
  uint64_t snlen, jlen, total = 0, sizes[3] = {0, 0, 0};
  codec_span state_blob, agg_blob;
  recorddict_t rd;
  record_t model, agg, mrec, vrec;
  npy_array *arrays = NULL;
  step_key *keys = NULL;
  so_params p;
  double values[7], numpy;
  sqlite3_int64 round;
  unsigned char *scratch = NULL, **owned = NULL;
  buf_t out;
  char q[CODEC_QUOTE_MAX];
  const char *names[3];
  int i, j, r, rc, has_m = 0, has_v = 0, nrec, nowned = 0;
  codec_err err;

  recorddict_init(&rd);
  record_init(&model);
  record_init(&agg);
  record_init(&mrec);
  record_init(&vrec);
  buf_init(&out, 0);

  if (sql_arg_text(ctx, argv[0], 0, "a strategy name", &sname, &snlen) <= 0) goto done;
  for (i = 0; i < (int)(sizeof(strategies) / sizeof(strategies[0])); i++)
    if (span_eq(cstr_span(strategies[i].name), (codec_span){(const unsigned char *)sname, snlen})) s = &strategies[i];
  if (!s) {
    codec_span sp = {(const unsigned char *)sname, snlen};
    sql_error(ctx, "unknown strategy '%s' (fedavg, fedavgm, fedadam, fedyogi, fedadagrad)", quote(q, sp));
    goto done;
  }
  if (sql_arg_blob(ctx, argv[1], 1, "a record dict", &state_blob.p, &state_blob.n) <= 0) goto done;
  if (sql_arg_blob(ctx, argv[2], 2, "a record", &agg_blob.p, &agg_blob.n) <= 0) goto done;
  if (sql_arg_int64(ctx, argv[3], 3, "server_round", &round) <= 0) goto done;
  memcpy(values, s->defaults, sizeof(values));
  if (argc > 4) {
    if (sql_arg_text(ctx, argv[4], 4, "an options JSON object", &json, &jlen) <= 0) goto done;
    if (!read_options(ctx, s, json, jlen, values)) goto done;
  }
  memset(&p, 0, sizeof(p));
  p.strategy = s->code;
  numpy = values[opt_index(s, cstr_span("numpy"))];
  if (numpy != 1 && numpy != 2) {
    sql_error(ctx, "option 'numpy' must be 1 or 2 (the NumPy whose promotion rules to follow), got %g", numpy);
    goto done;
  }
  if (s->code == SO_FEDAVGM) {
    p.lr = s->options == avg_opts ? 1.0 : values[0];
    p.momentum = s->options == avg_opts ? 0.0 : values[1];
    p.server_opt = p.momentum != 0.0 || p.lr != 1.0;
  } else {
    p.eta = values[0];
    p.tau = values[s->code == SO_FEDADAGRAD ? 2 : 4];
    p.beta_1 = s->code == SO_FEDADAGRAD ? 0.0 : values[2];
    p.beta_2 = s->code == SO_FEDADAGRAD ? 0.0 : values[3];
    if (s->code == SO_FEDADAM) {
      p.eta_norm = so_adam_eta_norm(p.eta, p.beta_1, p.beta_2, round);
      p.strong_eta = numpy == 2; /* NEP 50: a float64 NumPy scalar promotes float32 arrays */
    }
  }

  if ((rc = recorddict_parse(&rd, state_blob.p, state_blob.n, &err)) != CODEC_OK) {
    sql_codec_error(ctx, rc, &err);
    goto done;
  }
  names[0] = "arrays";
  names[1] = s->code == SO_FEDAVGM ? "momentum_vector" : "m_t";
  names[2] = "v_t";
  if ((r = state_record(ctx, &rd, "arrays", &model)) < 0) goto done;
  if (!r) {
    sql_error(ctx, "the state has no ArrayRecord 'arrays' (the global model): start from rd('arrays', 'array', model)");
    goto done;
  }
  if (so_has_m(&p) && (has_m = state_record(ctx, &rd, names[1], &mrec)) < 0) goto done;
  if (so_has_v(&p) && (has_v = state_record(ctx, &rd, names[2], &vrec)) < 0) goto done;
  if ((rc = record_parse(&agg, agg_blob.p, agg_blob.n, &err)) != CODEC_OK) {
    if (rc == CODEC_NOMEM)
      sqlite3_result_error_nomem(ctx);
    else
      sql_error(ctx, "aggregate: %s", err.msg);
    goto done;
  }

  {
    uint64_t nmax = (uint64_t)model.n;
    if ((uint64_t)agg.n > nmax) nmax = (uint64_t)agg.n;
    if ((uint64_t)mrec.n > nmax) nmax = (uint64_t)mrec.n;
    if ((uint64_t)vrec.n > nmax) nmax = (uint64_t)vrec.n;
    arrays = codec_malloc((nmax ? nmax : 1) * sizeof(npy_array));
    keys = codec_malloc((uint64_t)(model.n ? model.n : 1) * sizeof(step_key));
    scratch = am_scratch();
    owned = codec_malloc(((uint64_t)model.n + (uint64_t)agg.n + (uint64_t)mrec.n + (uint64_t)vrec.n + 1) *
                         sizeof(unsigned char *));
    if (!arrays || !keys || !scratch || !owned) goto nomem;
    memset(keys, 0, (size_t)(model.n ? model.n : 1) * sizeof(step_key));
  }
  if (!open_all(ctx, &model, arrays, "state 'arrays'", scratch, owned, &nowned)) goto done;
  for (i = 0; i < model.n; i++) {
    keys[i].x = arrays[i];
    if (arrays[i].dtype.type != DT_FLOAT32 && arrays[i].dtype.type != DT_FLOAT64) {
      sql_error(ctx,
                "key '%s' of the state's 'arrays' has dtype %s; the model must be float32, float64, integer or bool",
                quote(q, model.items[i].key), dt_type_name((dt_type)arrays[i].dtype.type));
      goto done;
    }
  }
  if (!open_all(ctx, &agg, arrays, "aggregate", scratch, owned, &nowned)) goto done;
  if (!match_keys(ctx, &model, keys, &agg, arrays, 1, "the aggregate")) goto done;
  if (has_m) {
    char what[64];
    snprintf(what, sizeof(what), "the state's '%s'", names[1]);
    if (!open_all(ctx, &mrec, arrays, names[1], scratch, owned, &nowned) ||
        !match_keys(ctx, &model, keys, &mrec, arrays, 2, what))
      goto done;
  }
  if (has_v) {
    if (!open_all(ctx, &vrec, arrays, names[2], scratch, owned, &nowned) ||
        !match_keys(ctx, &model, keys, &vrec, arrays, 3, "the state's 'v_t'"))
      goto done;
  }

  /* Dtypes and sizes: 'arrays', then the moments the strategy keeps. */
  nrec = 1 + so_has_m(&p) + so_has_v(&p);
  for (i = 0; i < model.n; i++) {
    step_key *k = &keys[i];
    k->has_m = has_m;
    k->has_v = has_v;
    k->t.x = k->x.dtype.type == DT_FLOAT32;
    k->t.a = k->a.dtype.type == DT_FLOAT32;
    k->t.m = has_m && k->m.dtype.type == DT_FLOAT32;
    k->t.v = has_v && k->v.dtype.type == DT_FLOAT32;
    if (k->t.x || k->t.a || k->t.m || k->t.v) {
      /* Scalars meet float32 arrays cast to float32; NumPy 1 would compute
      ** in float64 with one float32 cannot hold, NumPy 2 gives inf. */
      double eta = s->code != SO_FEDADAM ? p.eta : p.strong_eta ? 0 : p.eta_norm; /* FedAdam: eta_norm alone */
      double sc[6] = {eta, p.tau, p.lr, p.momentum, 1 - p.beta_1, 1 - p.beta_2};
      for (j = 0; j < 6; j++) {
        if (fabs(sc[j]) > FLT_MAX || fabs(p.beta_1) > FLT_MAX || fabs(p.beta_2) > FLT_MAX) {
          sql_error(ctx, "a step scalar (%g) overflows float32 (key '%s')",
                    fabs(sc[j]) > FLT_MAX      ? sc[j]
                    : fabs(p.beta_1) > FLT_MAX ? p.beta_1
                                               : p.beta_2,
                    quote(q, model.items[i].key));
          goto done;
        }
      }
    }
    so_result_types(&p, &k->t, has_m, has_v, &k->o);
    for (j = 0; j < 3; j++) {
      npy_array *res = &k->res[j];
      int f32 = j == 0 ? k->o.x : j == 1 ? k->o.m : k->o.v;
      memset(res, 0, sizeof(*res));
      res->dtype = dt_native(f32 ? DT_FLOAT32 : DT_FLOAT64);
      res->fortran_order = am_is_fortran(&k->x);
      res->ndim = k->x.ndim;
      memcpy(res->shape, k->x.shape, sizeof(int64_t) * (size_t)k->x.ndim);
      res->numel = k->x.numel;
      res->nbytes = k->x.numel * SZ(f32); /* no overflow: x holds numel elements of 4 or 8 bytes */
      if (size_add(sizes[j], array_result_size(model.items[i].key, res), &sizes[j])) goto toobig;
    }
  }
  for (j = 0; j < nrec; j++) {
    int slot = j == 0 ? 0 : j == 1 && so_has_m(&p) ? 1 : 2;
    if (size_add(total, recorddict_item_size(strlen(names[slot]), sizes[slot]), &total)) goto toobig;
  }
  sql_buf_init(ctx, &out);
  if (buf_reserve(&out, total) != CODEC_OK) goto result;
  for (j = 0; j < nrec; j++) {
    int slot = j == 0 ? 0 : j == 1 && so_has_m(&p) ? 1 : 2;
    recorddict_write_item_head(&out, cstr_span(names[slot]), RECORDDICT_ARRAY, sizes[slot]);
    for (i = 0; i < model.n; i++) {
      if (!(keys[i].dst[slot] = array_begin_result(&out, model.items[i].key, &keys[i].res[slot]))) goto result;
    }
  }
  for (i = 0; i < model.n; i++) step_key_run(&p, &keys[i], scratch);
result:
  sql_result_buf(ctx, &out, 0);
  goto done;
toobig:
  sqlite3_result_error_toobig(ctx);
  goto done;
nomem:
  sqlite3_result_error_nomem(ctx);
done:
  buf_free(&out);
  while (nowned > 0) codec_free(owned[--nowned]);
  codec_free(owned);
  codec_free(scratch);
  codec_free(keys);
  codec_free(arrays);
  record_clear(&vrec);
  record_clear(&mrec);
  record_clear(&agg);
  record_clear(&model);
  recorddict_clear(&rd);
}

/* ========================================================================== */
/* rd_mean                                                                    */
/* ========================================================================== */

/* One reply, parsed (views into the kept copy or SQLite's value). */
typedef struct reply {
  recorddict_t rd;
  int ai, mi; /* the ArrayRecord's and the MetricRecord's item */
  record_t rec;
  valrec_t mr;
  npy_array *arrays;
} reply;

typedef struct mean_state {
  int started, failed;
  int64_t row, cur, first_row;
  uint64_t nrows, cap;
  buf_t kept;     /* every reply's bytes, one after another */
  uint64_t *at;   /* per reply: its offset in kept, and its length */
  valrec_elem *w; /* per reply: its weight */
  int *wtype;
  buf_t wkey; /* the weighting key */
} mean_state;

static void reply_init(reply *r) {
  recorddict_init(&r->rd);
  record_init(&r->rec);
  valrec_init(&r->mr);
  r->arrays = NULL;
  r->ai = r->mi = -1;
}

static void reply_clear(reply *r) {
  codec_free(r->arrays);
  r->arrays = NULL;
  valrec_clear(&r->mr);
  record_clear(&r->rec);
  recorddict_clear(&r->rd);
}

/* Parse a reply as Flower's validate_message_reply_consistency sees it:
** one ArrayRecord, one MetricRecord. Problems go to err without the row. */
static int reply_parse(reply *r, const unsigned char *p, uint64_t n, codec_err *err) {
  int i, rc, na = 0, nm = 0;
  if ((rc = recorddict_parse(&r->rd, p, n, err)) != CODEC_OK) return rc;
  for (i = 0; i < r->rd.n; i++) {
    if (r->rd.items[i].kind == RECORDDICT_ARRAY && !na++) r->ai = i;
    if (r->rd.items[i].kind == RECORDDICT_METRIC && !nm++) r->mi = i;
  }
  if (na != 1) return codec_fail(err, CODEC_CORRUPT, "expected exactly one ArrayRecord, found %d", na);
  if (nm != 1) return codec_fail(err, CODEC_CORRUPT, "expected exactly one MetricRecord, found %d", nm);
  {
    const recorddict_item *it = &r->rd.items[r->ai];
    codec_err inner;
    if ((rc = record_parse(&r->rec, it->record.p, it->record.n, &inner)) != CODEC_OK)
      return rc == CODEC_NOMEM ? codec_nomem(err) : codec_fail(err, rc, "ArrayRecord: %s", inner.msg);
    if (!(r->arrays = codec_malloc((uint64_t)(r->rec.n ? r->rec.n : 1) * sizeof(npy_array)))) return codec_nomem(err);
    for (i = 0; i < r->rec.n; i++) {
      if ((rc = array_open(&r->rec.items[i], i, &r->arrays[i], &inner)) != CODEC_OK)
        return rc == CODEC_NOMEM ? codec_nomem(err) : codec_fail(err, rc, "ArrayRecord: %s", inner.msg);
    }
  }
  {
    const recorddict_item *it = &r->rd.items[r->mi];
    return recorddict_item_valrec(&r->mr, it, p, "MetricRecord", err);
  }
}

/* Is dtype t one aggregate_arrayrecords handles here? */
static int mean_dtype_ok(dt_type t) {
  char k = dt_kind(t);
  return k == DT_KIND_FLOAT || k == DT_KIND_INT || k == DT_KIND_UINT || k == DT_KIND_BOOL;
}

/* Check reply r (row st->cur) against the first one f and the weighting key.
** Problems go to err. */
static int reply_check(const mean_state *st, const reply *r, const reply *f, codec_span wkey, codec_err *err) {
  char q[CODEC_QUOTE_MAX], q2[CODEC_QUOTE_MAX], s1[80], s2[80];
  long long first = (long long)st->first_row;
  int i, j;
  const recorddict_item *ra = &r->rd.items[r->ai], *rm = &r->rd.items[r->mi];
  if (f) {
    const recorddict_item *fa = &f->rd.items[f->ai], *fm = &f->rd.items[f->mi];
    if (!span_eq(ra->name, fa->name))
      return codec_fail(err, CODEC_CORRUPT, "the ArrayRecord is named '%s' but '%s' in row %lld", quote(q, ra->name),
                        quote(q2, fa->name), first);
    if (!span_eq(rm->name, fm->name))
      return codec_fail(err, CODEC_CORRUPT, "the MetricRecord is named '%s' but '%s' in row %lld", quote(q, rm->name),
                        quote(q2, fm->name), first);
    for (i = 0; i < f->rec.n; i++) {
      const npy_array *a, *b = &f->arrays[i];
      j = record_find(&r->rec, f->rec.items[i].key.p, f->rec.items[i].key.n);
      if (j < 0)
        return codec_fail(err, CODEC_CORRUPT, "array key '%s' of row %lld is missing", quote(q, f->rec.items[i].key),
                          first);
      a = &r->arrays[j];
      if (a->dtype.type != b->dtype.type)
        return codec_fail(err, CODEC_CORRUPT, "array key '%s' has dtype %s but %s in row %lld",
                          quote(q, f->rec.items[i].key), dt_type_name((dt_type)a->dtype.type),
                          dt_type_name((dt_type)b->dtype.type), first);
      if (a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim))
        return codec_fail(err, CODEC_CORRUPT, "array key '%s' has shape %s but %s in row %lld",
                          quote(q, f->rec.items[i].key), am_shape_str(s1, sizeof(s1), a->ndim, a->shape),
                          am_shape_str(s2, sizeof(s2), b->ndim, b->shape), first);
    }
    if (r->rec.n != f->rec.n) {
      for (j = 0; j < r->rec.n; j++)
        if (record_find(&f->rec, r->rec.items[j].key.p, r->rec.items[j].key.n) < 0)
          return codec_fail(err, CODEC_CORRUPT, "array key '%s' is not in row %lld", quote(q, r->rec.items[j].key),
                            first);
    }
    for (i = 0; i < f->mr.n; i++) {
      const valrec_item *b = &f->mr.items[i], *a;
      j = valrec_find(&r->mr, b->key.p, b->key.n);
      if (j < 0) return codec_fail(err, CODEC_CORRUPT, "metric '%s' of row %lld is missing", quote(q, b->key), first);
      a = &r->mr.items[j];
      if (span_eq(b->key, wkey)) continue;
      if (VALREC_IS_LIST(a->type) != VALREC_IS_LIST(b->type))
        return codec_fail(err, CODEC_CORRUPT, "metric '%s' is a %s but a %s in row %lld", quote(q, b->key),
                          VALREC_IS_LIST(a->type) ? "list" : "number", VALREC_IS_LIST(b->type) ? "list" : "number",
                          first);
      if (VALREC_IS_LIST(a->type) && a->nvals != b->nvals)
        return codec_fail(err, CODEC_CORRUPT, "metric '%s' has %llu values but %llu in row %lld", quote(q, b->key),
                          (unsigned long long)a->nvals, (unsigned long long)b->nvals, first);
    }
    if (r->mr.n != f->mr.n) {
      for (j = 0; j < r->mr.n; j++)
        if (valrec_find(&f->mr, r->mr.items[j].key.p, r->mr.items[j].key.n) < 0)
          return codec_fail(err, CODEC_CORRUPT, "metric '%s' is not in row %lld", quote(q, r->mr.items[j].key), first);
    }
  } else {
    for (i = 0; i < r->rec.n; i++) {
      if (!mean_dtype_ok((dt_type)r->arrays[i].dtype.type))
        return codec_fail(err, CODEC_UNSUPPORTED, "array key '%s' has dtype %s, which rd_mean does not average",
                          quote(q, r->rec.items[i].key), dt_type_name((dt_type)r->arrays[i].dtype.type));
    }
  }
  j = valrec_find(&r->mr, wkey.p, wkey.n);
  if (j < 0)
    return codec_fail(err, CODEC_CORRUPT, "the MetricRecord '%s' has no weighting key '%s'", quote(q, rm->name),
                      quote(q2, wkey));
  if (VALREC_IS_LIST(r->mr.items[j].type))
    return codec_fail(err, CODEC_CORRUPT, "weighting key '%s' must be a single value, found a list", quote(q, wkey));
  return CODEC_OK;
}

static int mean_fail(sqlite3_context *ctx, mean_state *st, int rc, const codec_err *err) {
  st->failed = 1;
  if (rc == CODEC_NOMEM) {
    sqlite3_result_error_nomem(ctx);
  } else {
    sql_error(ctx, "row %lld: %s", (long long)st->cur, err->msg);
  }
  return 0;
}

static void mean_free(mean_state *st) {
  buf_free(&st->kept);
  buf_free(&st->wkey);
  codec_free(st->at);
  codec_free(st->w);
  codec_free(st->wtype);
  st->at = NULL;
  st->w = NULL;
  st->wtype = NULL;
}

static void mean_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  mean_state *st = sqlite3_aggregate_context(ctx, sizeof(*st));
  codec_span blob, wkey;
  reply r, f;
  codec_err err;
  int rc, j;
  if (!st) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (!st->started) {
    st->started = 1;
    buf_init(&st->kept, sql_limit(ctx));
    buf_init(&st->wkey, UINT64_MAX);
  }
  st->cur = st->row++;
  if (st->failed || sqlite3_value_type(argv[0]) == SQLITE_NULL) return; /* NULL reply: skipped */
  wkey = cstr_span("num-examples");
  if (argc > 1) {
    const char *p;
    uint64_t n;
    if (sqlite3_value_type(argv[1]) != SQLITE_TEXT) {
      st->failed = 1;
      sql_error(ctx, "row %lld: weighting_key must be text", (long long)st->cur);
      return;
    }
    if (sql_arg_text(ctx, argv[1], 1, "a weighting key", &p, &n) <= 0) {
      st->failed = 1;
      return;
    }
    wkey.p = (const unsigned char *)p;
    wkey.n = n;
  }
  if (st->nrows && !span_eq(wkey, (codec_span){st->wkey.p ? st->wkey.p : (const unsigned char *)"", st->wkey.n})) {
    st->failed = 1;
    sql_error(ctx, "row %lld: weighting_key must be the same in every row", (long long)st->cur);
    return;
  }
  if (sqlite3_value_type(argv[0]) != SQLITE_BLOB) {
    sql_blob_type_problem(&err, argv[0], 0, "a record dict");
    mean_fail(ctx, st, CODEC_CORRUPT, &err);
    return;
  }
  if (sql_blob_span(argv[0], &blob) != SQLITE_OK) {
    mean_fail(ctx, st, CODEC_NOMEM, &err);
    return;
  }
  reply_init(&r);
  reply_init(&f);
  if ((rc = reply_parse(&r, blob.p, blob.n, &err)) != CODEC_OK) goto fail;
  if (st->nrows) {
    /* the first reply, from its kept copy */
    if ((rc = reply_parse(&f, st->kept.p + st->at[0], st->at[1], &err)) != CODEC_OK) goto fail;
  } else {
    st->first_row = st->cur;
    buf_append(&st->wkey, wkey.p, wkey.n);
    if (st->wkey.rc) {
      rc = CODEC_NOMEM;
      goto fail;
    }
  }
  if ((rc = reply_check(st, &r, st->nrows ? &f : NULL, wkey, &err)) != CODEC_OK) goto fail;
  if (st->nrows == st->cap) {
    uint64_t cap = st->cap ? 2 * st->cap : 8;
    uint64_t *at = codec_realloc(st->at, cap * 2 * sizeof(uint64_t));
    valrec_elem *w;
    int *wt;
    if (at) st->at = at;
    w = at ? codec_realloc(st->w, cap * sizeof(valrec_elem)) : NULL;
    if (w) st->w = w;
    wt = w ? codec_realloc(st->wtype, cap * sizeof(int)) : NULL;
    if (!wt) {
      rc = CODEC_NOMEM;
      goto fail;
    }
    st->wtype = wt;
    st->cap = cap;
  }
  j = valrec_find(&r.mr, wkey.p, wkey.n);
  st->w[st->nrows] = r.mr.items[j].v;
  st->wtype[st->nrows] = r.mr.items[j].type;
  st->at[2 * st->nrows] = st->kept.n;
  st->at[2 * st->nrows + 1] = blob.n;
  buf_append(&st->kept, blob.p, blob.n);
  if (st->kept.rc) {
    if (st->kept.rc == CODEC_NOMEM) {
      rc = CODEC_NOMEM;
      goto fail;
    }
    st->failed = 1;
    sql_error(ctx, "the replies kept would exceed SQLITE_LIMIT_LENGTH (%llu bytes) at row %lld",
              (unsigned long long)st->kept.limit, (long long)st->cur);
    goto done;
  }
  st->nrows++;
  goto done;
fail:
  mean_fail(ctx, st, rc, &err);
done:
  reply_clear(&f);
  reply_clear(&r);
}

/* A weight or metric value as Python's float(value). */
static double elem_double(int type, const valrec_elem *e) {
  return type == VALREC_DOUBLE ? e->d : type == VALREC_SINT64 ? (double)e->i : (double)e->u;
}

/* Python's sum(weights): exact while every weight is an int. 1, or 0 after an error. */
static int mean_total(sqlite3_context *ctx, const mean_state *st, int *is_int, int64_t *ti, double *td) {
  uint64_t r;
  *is_int = 1;
  *ti = 0;
  *td = 0;
  for (r = 0; r < st->nrows; r++) {
    int t = st->wtype[r];
    const valrec_elem *e = &st->w[r];
    if (*is_int && t != VALREC_DOUBLE) {
      int64_t add;
      if (t == VALREC_UINT64 && e->u > (uint64_t)INT64_MAX) goto big;
      add = t == VALREC_SINT64 ? e->i : (int64_t)e->u;
      if ((add > 0 && *ti > INT64_MAX - add) || (add < 0 && *ti < INT64_MIN - add)) goto big;
      *ti += add;
    } else if (*is_int) {
      *td = (double)*ti + e->d;
      *is_int = 0;
    } else {
      *td = *td + elem_double(t, e);
    }
  }
  if (*is_int ? *ti == 0 : *td == 0) {
    sql_error(ctx, "the weights sum to 0 (Flower divides by their sum)");
    return 0;
  }
  return 1;
big:
  sql_error(ctx, "the weights' sum overflows int64");
  return 0;
}

static void put_le64(buf_t *b, double d) {
  unsigned char t[8];
  uint64_t u;
  int k;
  memcpy(&u, &d, sizeof(u));
  for (k = 0; k < 8; k++) t[k] = (unsigned char)(u >> (8 * k));
  buf_append(b, t, 8);
}

/* A MetricRecord item holding a double (list == NULL) or a list of n doubles. */
static void put_metric(buf_t *out, codec_span key, double d, const double *list, uint64_t n) {
  uint64_t packed = 8 * n, listmsg = n ? 1 + pb_varint_size(packed) + packed : 0;
  uint64_t val = list ? 2 + pb_varint_size(listmsg) + listmsg : 9;
  uint64_t k;
  buf_putc(out, 0x0a);
  pb_put_varint(out, pb_len_field_size(key.n) + 1 + pb_varint_size(val) + val);
  pb_put_len_field(out, 0x0a, key.p, key.n);
  buf_putc(out, 0x12);
  pb_put_varint(out, val);
  if (!list) {
    buf_putc(out, 0x09);
    put_le64(out, d);
    return;
  }
  pb_put_varint(out, (uint64_t)VALREC_DOUBLE_LIST << 3 | PB_WT_LEN);
  pb_put_varint(out, listmsg);
  if (!n) return;
  buf_putc(out, 0x0a);
  pb_put_varint(out, packed);
  for (k = 0; k < n; k++) put_le64(out, list[k]);
}

/* Fold row r's array a (weight factor w) into acc (the result, type out). */
static void mean_add(const npy_array *a, int fortran, dt_type out, double w, unsigned char *acc, int first,
                     unsigned char *scratch) {
  am_iter it;
  uint64_t pos;
  dt_type t = (dt_type)a->dtype.type;
  am_iter_init(&it, a, fortran, 1);
  for (pos = 0; pos < a->numel; pos += KN_BLOCK) {
    size_t n = a->numel - pos < KN_BLOCK ? (size_t)(a->numel - pos) : KN_BLOCK;
    const unsigned char *p = am_iter_next(&it, n, scratch);
    if (out == DT_FLOAT16) {
      so_wsum_f16(n, p, w, acc + pos * 2, first);
    } else if (out == DT_FLOAT32) {
      so_wsum_f32(n, p, w, acc + pos * 4, first);
    } else {
      const void *d = p;
      if (t != DT_FLOAT64) { /* bool and integers: value.numpy() * weight is float64 */
        unsigned char *conv = scratch + (size_t)KN_BLOCK * 16;
        kn_to_f64(t, p, conv, n);
        d = conv;
      }
      so_wsum_f64(n, d, w, acc + pos * 8, first);
    }
  }
}

/* The result array of a mean of arrays like a (nbytes left 0): floating
** dtypes kept (native order), others as float64, a's shape and order. */
static void mean_result(const npy_array *a, npy_array *res) {
  dt_type t = (dt_type)a->dtype.type;
  memset(res, 0, sizeof(*res));
  res->dtype = dt_native(dt_kind(t) == DT_KIND_FLOAT ? t : DT_FLOAT64);
  res->fortran_order = am_is_fortran(a);
  res->ndim = a->ndim;
  memcpy(res->shape, a->shape, sizeof(int64_t) * (size_t)res->ndim);
  res->numel = a->numel;
}

static void mean_final(sqlite3_context *ctx) {
  mean_state *st = sqlite3_aggregate_context(ctx, 0);
  reply *rs = NULL;
  double *factor = NULL, *list = NULL;
  unsigned char *scratch = NULL;
  buf_t out, metrics;
  uint64_t r, asize = 0, maxlist = 1;
  int i, j, rc, is_int;
  int64_t ti;
  double td;
  codec_err err;
  codec_span wkey;
  if (!st) return; /* no rows: NULL */
  buf_init(&out, 0);
  buf_init(&metrics, 0);
  if (st->failed || !st->nrows) goto done;
  wkey.p = st->wkey.p ? st->wkey.p : (const unsigned char *)"";
  wkey.n = st->wkey.n;
  if (!mean_total(ctx, st, &is_int, &ti, &td)) goto done;
  if ((rs = codec_malloc(st->nrows * sizeof(reply))) != NULL)
    for (r = 0; r < st->nrows; r++) reply_init(&rs[r]); /* before any goto: done clears them */
  factor = codec_malloc(st->nrows * sizeof(double));
  scratch = am_scratch();
  if (!rs || !factor || !scratch) goto nomem;
  for (r = 0; r < st->nrows; r++) {
    /* w / total_weight, as Python divides an int or float by an int or float */
    double w = elem_double(st->wtype[r], &st->w[r]);
    factor[r] = w / (is_int ? (double)ti : td);
    if ((rc = reply_parse(&rs[r], st->kept.p + st->at[2 * r], st->at[2 * r + 1], &err)) != CODEC_OK) {
      if (rc == CODEC_NOMEM) goto nomem;
      sql_error(ctx, "%s", err.msg); /* parsed once already: cannot happen */
      goto done;
    }
  }
  /* The ArrayRecord, in the first reply's key order. */
  {
    const reply *f = &rs[0];
    const recorddict_item *fa = &f->rd.items[f->ai], *fm = &f->rd.items[f->mi];
    for (i = 0; i < f->rec.n; i++) {
      npy_array res;
      mean_result(&f->arrays[i], &res);
      if (size_mul(res.numel, dt_size((dt_type)res.dtype.type), &res.nbytes) ||
          size_add(asize, array_result_size(f->rec.items[i].key, &res), &asize)) {
        sqlite3_result_error_toobig(ctx);
        goto done;
      }
    }
    /* The MetricRecord first (small), to know the whole size. */
    buf_init(&metrics, sql_limit(ctx));
    for (i = 0; i < f->mr.n; i++)
      if (VALREC_IS_LIST(f->mr.items[i].type) && f->mr.items[i].nvals > maxlist) maxlist = f->mr.items[i].nvals;
    if (maxlist > UINT64_MAX / 8 || !(list = codec_malloc(maxlist * sizeof(double)))) goto nomem;
    for (i = 0; i < f->mr.n; i++) {
      const valrec_item *key = &f->mr.items[i];
      double acc = 0;
      if (span_eq(key->key, wkey)) continue; /* the weighting key is left out */
      for (r = 0; r < st->nrows; r++) {
        const valrec_item *v = &rs[r].mr.items[valrec_find(&rs[r].mr, key->key.p, key->key.n)];
        if (VALREC_IS_LIST(key->type)) {
          valrec_iter li;
          valrec_elem e;
          uint64_t k = 0;
          valrec_iter_init(&li, v);
          while (k < key->nvals && valrec_iter_next(&li, &e)) {
            double prod = elem_double(v->type - 20, &e) * factor[r];
            list[k] = r ? list[k] + prod : prod; /* curr + val * weight */
            k++;
          }
        } else {
          double prod = elem_double(v->type, &v->v) * factor[r];
          acc = r ? acc + prod : prod;
        }
      }
      put_metric(&metrics, key->key, acc, VALREC_IS_LIST(key->type) ? list : NULL,
                 VALREC_IS_LIST(key->type) ? key->nvals : 0);
    }
    if (metrics.rc) {
      sql_result_buf(ctx, &metrics, 0);
      goto done;
    }
    sql_buf_init(ctx, &out);
    {
      uint64_t total;
      if (size_add(recorddict_item_size(fa->name.n, asize), recorddict_item_size(fm->name.n, metrics.n), &total)) {
        sqlite3_result_error_toobig(ctx);
        goto done;
      }
      if (buf_reserve(&out, total) != CODEC_OK) goto result;
    }
    recorddict_write_item_head(&out, fa->name, RECORDDICT_ARRAY, asize);
    for (i = 0; i < f->rec.n; i++) {
      npy_array res;
      unsigned char *dst;
      mean_result(&f->arrays[i], &res);
      res.nbytes = res.numel * dt_size((dt_type)res.dtype.type); /* checked above */
      if (!(dst = array_begin_result(&out, f->rec.items[i].key, &res))) goto result;
      for (r = 0; r < st->nrows; r++) {
        j = record_find(&rs[r].rec, f->rec.items[i].key.p, f->rec.items[i].key.n);
        mean_add(&rs[r].arrays[j], res.fortran_order, (dt_type)res.dtype.type, factor[r], dst, r == 0, scratch);
      }
    }
    recorddict_write_item(&out, fm->name, RECORDDICT_METRIC,
                          (codec_span){metrics.p ? metrics.p : (const unsigned char *)"", metrics.n});
  }
result:
  sql_result_buf(ctx, &out, 0);
  goto done;
nomem:
  sqlite3_result_error_nomem(ctx);
done:
  if (rs)
    for (r = 0; r < st->nrows; r++) reply_clear(&rs[r]);
  codec_free(rs);
  codec_free(factor);
  codec_free(list);
  codec_free(scratch);
  buf_free(&metrics);
  buf_free(&out);
  mean_free(st);
}

static const sql_function strategy_functions[] = {
    {"ar_server_step", 4, server_step, NULL, NULL, 0},
    {"ar_server_step", 5, server_step, NULL, NULL, 0},
    {"rd_mean", 1, NULL, mean_step, mean_final, 0},
    {"rd_mean", 2, NULL, mean_step, mean_final, 0},
};

int sql_strategy_register(sqlite3 *db, char **pzErrMsg) { return SQL_REGISTER_TABLE(db, strategy_functions, pzErrMsg); }
