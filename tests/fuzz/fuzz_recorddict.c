/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_recorddict.c — libFuzzer harness for the RecordDict, MetricRecord
** and ConfigRecord readers (recorddict_parse, valrec_parse), their JSON
** mapping and the canonical writer. The input is read as a RecordDict
** (every item's record parsed and walked), as a metric and a config record,
** and as JSON text for valrec_from_json. Checks: every value walks; the
** JSON of a record reads back (valrec_from_json) to bytes whose JSON is the
** same text; canonical bytes (valrec_write) are a fixed point and agree
** with what the JSON rebuilds whenever the record is typed as Flower types
** values; the re-encoded RecordDict (recorddict_canonical) exists whenever
** every record reads, keeps the names and kinds, and is a fixed point.
**
** seeds: tests/data/recorddict
*/
#include "codec/recorddict.h"
#include "codec/record.h"
#include "codec/valrec.h"
#include "fuzz.h"

#include <math.h>
#include <stdio.h>

static int same_buf(const buf_t *a, const buf_t *b) {
  return a->n == b->n && (!a->n || memcmp(a->p, b->p, (size_t)a->n) == 0);
}

/* A NaN other than the one JSON's {"double": "NaN"} reads back as (the
** payload and sign of a NaN are not kept; Python writes only this one). */
static int odd_nan(double d) {
  double q = NAN;
  return d != d && memcmp(&d, &q, sizeof(d)) != 0;
}

/* JSON of a parsed record. */
static int to_json(const valrec_t *vr, buf_t *out) {
  buf_init(out, 1u << 24);
  valrec_to_json(out, vr);
  return out->rc;
}

static void check_valrec(const valrec_t *vr, int config) {
  buf_t json, canon, rebuilt, json2, canon2;
  codec_err err;
  valrec_t again;
  int i, rc;
  for (i = 0; i < vr->n; i++) {
    const valrec_item *it = &vr->items[i];
    FUZZ_CHECK(codec_utf8_valid(it->key.p, it->key.n));
    FUZZ_CHECK(valrec_find(vr, it->key.p, it->key.n) == i);
    FUZZ_CHECK(it->type != VALREC_NONE);
    if (!config)
      FUZZ_CHECK(it->type <= VALREC_UINT64 || (it->type >= VALREC_DOUBLE_LIST && it->type <= VALREC_UINT_LIST));
    if (VALREC_IS_LIST(it->type)) {
      valrec_iter li;
      valrec_elem e;
      uint64_t n = 0;
      valrec_iter_init(&li, it);
      while (valrec_iter_next(&li, &e)) n++;
      FUZZ_CHECK(n == it->nvals);
    }
  }
  /* canonical bytes: parse back to the same JSON, and are a fixed point */
  buf_init(&canon, UINT64_MAX);
  valrec_write(&canon, vr);
  if (canon.rc == CODEC_OK && to_json(vr, &json) == CODEC_OK) {
    valrec_init(&again);
    rc = valrec_parse(&again, config, buf_at(&canon, 0), 0, canon.n, "canonical", &err);
    FUZZ_CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
    if (rc == CODEC_OK) {
      FUZZ_CHECK(again.n == vr->n);
      buf_init(&canon2, UINT64_MAX);
      valrec_write(&canon2, &again);
      FUZZ_CHECK(canon2.rc != CODEC_OK || same_buf(&canon, &canon2));
      buf_free(&canon2);
      if (to_json(&again, &json2) == CODEC_OK) FUZZ_CHECK(same_buf(&json, &json2));
      buf_free(&json2);
    }
    valrec_clear(&again);
    /* the JSON reads back; its bytes give the same JSON */
    buf_init(&rebuilt, UINT64_MAX);
    rc = valrec_from_json(&rebuilt, config, buf_at(&json, 0), json.n, "json", &err);
    if (rc != CODEC_OK) {
      if (rc != CODEC_NOMEM)
        fprintf(stderr, "from_json failed: %s\n%.*s\n", err.msg, (int)json.n, (const char *)buf_at(&json, 0));
      FUZZ_CHECK(rc == CODEC_NOMEM);
    } else {
      valrec_init(&again);
      rc = valrec_parse(&again, config, buf_at(&rebuilt, 0), 0, rebuilt.n, "rebuilt", &err);
      FUZZ_CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
      if (rc == CODEC_OK && to_json(&again, &json2) == CODEC_OK) {
        int flower_typed = 1;
        FUZZ_CHECK(same_buf(&json, &json2));
        /* Flower's typing: uint64 only above INT64_MAX, [] as Flower types it */
        for (i = 0; i < vr->n; i++) {
          const valrec_item *it = &vr->items[i];
          if (it->type == VALREC_UINT64 && it->v.u <= (uint64_t)INT64_MAX) flower_typed = 0;
          if (it->type == VALREC_DOUBLE && odd_nan(it->v.d)) flower_typed = 0;
          if (VALREC_IS_LIST(it->type)) {
            valrec_iter li;
            valrec_elem e;
            int big = 0;
            if (it->nvals == 0 && it->type != (config ? VALREC_BOOL_LIST : VALREC_DOUBLE_LIST)) flower_typed = 0;
            valrec_iter_init(&li, it);
            while (valrec_iter_next(&li, &e)) {
              big |= e.u > (uint64_t)INT64_MAX;
              if (it->type == VALREC_DOUBLE_LIST && odd_nan(e.d)) flower_typed = 0;
            }
            if (it->type == VALREC_UINT_LIST && it->nvals && !big) flower_typed = 0;
          }
        }
        if (flower_typed) FUZZ_CHECK(same_buf(&canon, &rebuilt));
      }
      if (rc == CODEC_OK) buf_free(&json2);
      valrec_clear(&again);
    }
    buf_free(&rebuilt);
  }
  buf_free(&json);
  buf_free(&canon);
}

/* The re-encoded RecordDict: there when every record read (records_ok),
** the same names and kinds, a fixed point. */
static void check_canonical(const uint8_t *data, size_t size, const recorddict_t *rd, int records_ok) {
  buf_t canon, again;
  recorddict_t back;
  codec_err err;
  int rc, i;
  buf_init(&canon, UINT64_MAX);
  err.msg[0] = 0;
  rc = recorddict_canonical(&canon, data, size, &err);
  if (rc != CODEC_OK) {
    fuzz_check_error(rc, &err);
    FUZZ_CHECK(rc == CODEC_NOMEM || (!records_ok && rc == CODEC_CORRUPT));
    buf_free(&canon);
    return;
  }
  recorddict_init(&back);
  rc = recorddict_parse(&back, buf_at(&canon, 0), canon.n, &err);
  FUZZ_CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
  if (rc == CODEC_OK) {
    FUZZ_CHECK(back.n == rd->n);
    for (i = 0; i < rd->n; i++) {
      FUZZ_CHECK(back.items[i].kind == rd->items[i].kind && back.items[i].name.n == rd->items[i].name.n);
      FUZZ_CHECK(rd->items[i].name.n == 0 ||
                 memcmp(back.items[i].name.p, rd->items[i].name.p, (size_t)rd->items[i].name.n) == 0);
    }
  }
  recorddict_clear(&back);
  buf_init(&again, UINT64_MAX);
  rc = recorddict_canonical(&again, buf_at(&canon, 0), canon.n, &err);
  FUZZ_CHECK(rc == CODEC_NOMEM || (rc == CODEC_OK && same_buf(&canon, &again)));
  buf_free(&again);
  buf_free(&canon);
}

static void check_recorddict(const uint8_t *data, size_t size) {
  recorddict_t rd;
  codec_err err;
  int rc, i, records_ok = 1;
  recorddict_init(&rd);
  err.msg[0] = 0;
  rc = recorddict_parse(&rd, data, size, &err);
  if (rc != CODEC_OK) {
    fuzz_check_error(rc, &err);
    FUZZ_CHECK(rc == CODEC_CORRUPT || rc == CODEC_NOMEM);
  } else {
    buf_t out;
    buf_init(&out, UINT64_MAX);
    for (i = 0; i < rd.n; i++) {
      const recorddict_item *it = &rd.items[i];
      FUZZ_CHECK(recorddict_find(&rd, it->name.p, it->name.n) == i);
      /* a view of the blob, or the merge of several occurrences (no longer than the blob) */
      FUZZ_CHECK(it->record.n == 0 || recorddict_item_merged(it, data) ||
                 (it->record.p == data + it->record_at && it->record_at + it->record.n <= size));
      FUZZ_CHECK(it->record.n <= size);
      recorddict_write_item(&out, it->name, it->kind, it->record);
      if (it->kind == RECORDDICT_ARRAY) {
        record_t rec;
        record_init(&rec);
        err.msg[0] = 0;
        rc = record_parse(&rec, it->record.p, it->record.n, &err);
        if (rc) fuzz_check_error(rc, &err), records_ok = 0;
        record_clear(&rec);
      } else {
        valrec_t vr;
        valrec_init(&vr);
        err.msg[0] = 0;
        rc = recorddict_item_valrec(&vr, it, data, "record", &err);
        if (rc) {
          fuzz_check_error(rc, &err), records_ok = 0;
        } else {
          check_valrec(&vr, it->kind == RECORDDICT_CONFIG);
          if (recorddict_item_merged(it, data)) {
            /* read piece by piece, or as the merged bytes: the same record */
            valrec_t whole;
            buf_t a, b;
            valrec_init(&whole);
            rc = valrec_parse(&whole, it->kind == RECORDDICT_CONFIG, it->record.p, 0, it->record.n, "merged", &err);
            FUZZ_CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
            if (rc == CODEC_OK && to_json(&vr, &a) == CODEC_OK) {
              if (to_json(&whole, &b) == CODEC_OK) FUZZ_CHECK(same_buf(&a, &b));
              buf_free(&b);
            }
            if (rc == CODEC_OK) buf_free(&a);
            valrec_clear(&whole);
          }
        }
        valrec_clear(&vr);
      }
    }
    check_canonical(data, size, &rd, records_ok);
    /* the canonical structure parses back to the same items */
    if (out.rc == CODEC_OK) {
      recorddict_t again;
      recorddict_init(&again);
      rc = recorddict_parse(&again, buf_at(&out, 0), out.n, &err);
      FUZZ_CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
      if (rc == CODEC_OK) {
        FUZZ_CHECK(again.n == rd.n);
        for (i = 0; i < rd.n; i++) {
          FUZZ_CHECK(again.items[i].kind == rd.items[i].kind && again.items[i].record.n == rd.items[i].record.n);
          FUZZ_CHECK(again.items[i].name.n == rd.items[i].name.n &&
                     memcmp(again.items[i].name.p, rd.items[i].name.p, (size_t)rd.items[i].name.n) == 0);
        }
      }
      recorddict_clear(&again);
    }
    buf_free(&out);
  }
  recorddict_clear(&rd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *d = size ? data : (const uint8_t *)"";
  codec_err err;
  int config, rc;
  check_recorddict(d, size);
  for (config = 0; config < 2; config++) {
    valrec_t vr;
    buf_t out;
    valrec_init(&vr);
    err.msg[0] = 0;
    rc = valrec_parse(&vr, config, d, 0, size, "record", &err);
    if (rc)
      fuzz_check_error(rc, &err);
    else
      check_valrec(&vr, config);
    valrec_clear(&vr);
    /* the input as JSON */
    buf_init(&out, 1u << 24);
    err.msg[0] = 0;
    rc = valrec_from_json(&out, config, d, size, "json", &err);
    if (rc) {
      fuzz_check_error(rc, &err);
    } else {
      valrec_init(&vr);
      rc = valrec_parse(&vr, config, buf_at(&out, 0), 0, out.n, "built", &err);
      FUZZ_CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
      if (rc == CODEC_OK) check_valrec(&vr, config);
      valrec_clear(&vr);
    }
    buf_free(&out);
  }
  return 0;
}
