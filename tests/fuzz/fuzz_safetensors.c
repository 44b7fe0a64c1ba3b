/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_safetensors.c — libFuzzer harness for the safetensors reader
** (st_parse) and what reads a parsed file: st_to_record, st_metadata_json,
** and the writer st_from_record, with the input's header also tried as a
** metadata argument.
**
** Properties: errors are well-formed; a file that parses converts to a
** record that parses, writes back to a file that parses to the same tensors
** (names, dtypes, shapes, bytes, in data order) and the same metadata, and
** both the record and the written file are fixed points (converting again
** gives the same bytes). The whole pipeline runs a second time with one
** allocation failing (fuzz_oom_check).
**
** Inputs are safetensors files; seeds in tests/fuzz/corpus/safetensors are
** made by tests/fuzz/gen_seeds.py.
*/
#include "../host/failalloc.h"
#include "fuzz.h"
#include "codec/safetensors.h"

typedef struct input {
  const uint8_t *data;
  size_t size;
} input;

static int out_rc(int rc, const buf_t *out) { return rc == CODEC_OK && out->rc ? out->rc : rc; }

/* Parse a record BLOB and write it as safetensors (with metadata m). */
static int record_to_st(const buf_t *rec_bytes, const buf_t *m, buf_t *file, codec_err *err) {
  record_t rec;
  int rc;
  record_init(&rec);
  rc = record_parse(&rec, rec_bytes->n ? rec_bytes->p : (const unsigned char *)"", rec_bytes->n, err);
  if (rc == CODEC_OK) rc = st_from_record(&rec, m ? (const char *)m->p : NULL, m ? m->n : 0, file, err);
  record_clear(&rec);
  return rc;
}

/* The file's record and (when it has some) metadata JSON. */
static int st_read(const unsigned char *p, uint64_t n, st_file *f, buf_t *rec, buf_t *meta, codec_err *err) {
  int rc = st_parse(f, p, n, err);
  if (rc == CODEC_OK) rc = st_to_record(f, rec, err);
  if (rc == CODEC_OK && f->has_metadata) rc = st_metadata_json(f, meta, err);
  return rc;
}

/* Everything the harness runs, outputs appended to out: parse, convert,
** write back, parse again; and the header as a metadata argument. */
static int pipeline(const void *arg, buf_t *out) {
  const input *in = arg;
  st_file f, g;
  buf_t rec, meta, file, rec2, meta2;
  codec_err err;
  int rc, rc2 = CODEC_OK;
  st_file_init(&f);
  st_file_init(&g);
  buf_init(&rec, UINT64_MAX);
  buf_init(&meta, UINT64_MAX);
  buf_init(&file, UINT64_MAX);
  buf_init(&rec2, UINT64_MAX);
  buf_init(&meta2, UINT64_MAX);
  rc = st_read(in->data, in->size, &f, &rec, &meta, &err);
  if (rc == CODEC_OK) rc = record_to_st(&rec, f.has_metadata ? &meta : NULL, &file, &err);
  if (rc == CODEC_OK) rc = st_read(file.p, file.n, &g, &rec2, &meta2, &err);
  buf_append(out, &rc, sizeof(rc));
  buf_append(out, rec.p, rec.n);
  buf_append(out, meta.p, meta.n);
  buf_append(out, file.p, file.n);
  if (in->size > 8) { /* the header as metadata of an empty record */
    record_t empty;
    buf_t mfile;
    record_init(&empty);
    buf_init(&mfile, UINT64_MAX);
    rc2 = st_from_record(&empty, (const char *)in->data + 8, in->size - 8, &mfile, &err);
    buf_append(out, &rc2, sizeof(rc2));
    buf_append(out, mfile.p, mfile.n);
    buf_free(&mfile);
    if (rc2 == CODEC_NOMEM) rc = rc2;
  }
  st_file_free(&f);
  st_file_free(&g);
  buf_free(&rec);
  buf_free(&meta);
  buf_free(&file);
  buf_free(&rec2);
  buf_free(&meta2);
  return out_rc(rc, out);
}

static void check_parsed(const st_file *f, const uint8_t *data, size_t size) {
  uint32_t i;
  FUZZ_CHECK(f->header_len <= ST_MAX_HEADER && 8 + f->header_len + f->data_len == size);
  FUZZ_CHECK(f->data == data + 8 + f->header_len);
  for (i = 0; i < f->n; i++) {
    const st_tensor *t = &f->t[i];
    FUZZ_CHECK(t->begin <= t->end && t->end <= f->data_len);
    FUZZ_CHECK(i == 0 ? t->begin == 0 : t->begin == f->t[i - 1].end);
    FUZZ_CHECK(t->ndim >= 0 && t->ndim <= RECORD_MAX_DIMS && t->dims_off + (uint64_t)t->ndim <= f->ndims);
    FUZZ_CHECK(codec_utf8_valid(buf_at(&f->names, t->name_off), t->name_len));
  }
  FUZZ_CHECK(f->n == 0 ? f->data_len == 0 : f->t[f->n - 1].end == f->data_len);
}

/* The same tensors, in the same data order. */
static void check_same_tensors(const st_file *f, const st_file *g) {
  uint32_t i;
  FUZZ_CHECK(f->n == g->n && f->has_metadata == g->has_metadata);
  for (i = 0; i < f->n; i++) {
    const st_tensor *a = &f->t[i], *b = &g->t[i];
    FUZZ_CHECK(a->name_len == b->name_len &&
               memcmp(buf_at(&f->names, a->name_off), buf_at(&g->names, b->name_off), (size_t)a->name_len) == 0);
    FUZZ_CHECK(a->code == b->code && a->ndim == b->ndim);
    FUZZ_CHECK(memcmp(f->dims + a->dims_off, g->dims + b->dims_off, sizeof(int64_t) * (size_t)a->ndim) == 0);
    FUZZ_CHECK(a->end - a->begin == b->end - b->begin);
    FUZZ_CHECK(memcmp(f->data + a->begin, g->data + b->begin, (size_t)(a->end - a->begin)) == 0);
  }
}

static void check_properties(const uint8_t *data, size_t size) {
  st_file f, g, h;
  buf_t rec, meta, file, rec2, meta2, file2;
  codec_err err;
  int rc;
  st_file_init(&f);
  st_file_init(&g);
  st_file_init(&h);
  buf_init(&rec, UINT64_MAX);
  buf_init(&meta, UINT64_MAX);
  buf_init(&file, UINT64_MAX);
  buf_init(&rec2, UINT64_MAX);
  buf_init(&meta2, UINT64_MAX);
  buf_init(&file2, UINT64_MAX);
  err.msg[0] = 0;
  rc = st_parse(&f, data, size, &err);
  if (rc != CODEC_OK) {
    fuzz_check_error(rc, &err);
    FUZZ_CHECK(rc == CODEC_CORRUPT);
    goto done;
  }
  check_parsed(&f, data, size);
  rc = st_to_record(&f, &rec, &err);
  if (rc != CODEC_OK) {
    /* Only a dimension past Flower's int32 shape (of a zero-size tensor). */
    fuzz_check_error(rc, &err);
    FUZZ_CHECK(rc == CODEC_UNSUPPORTED && strstr(err.msg, "int32"));
    goto done;
  }
  if (f.has_metadata) FUZZ_CHECK(st_metadata_json(&f, &meta, &err) == CODEC_OK);
  /* Record -> file -> the same tensors and metadata. */
  rc = record_to_st(&rec, f.has_metadata ? &meta : NULL, &file, &err);
  FUZZ_CHECK(rc == CODEC_OK);
  FUZZ_CHECK(st_parse(&g, file.p, file.n, &err) == CODEC_OK);
  FUZZ_CHECK((8 + g.header_len) % 8 == 0);
  check_same_tensors(&f, &g);
  FUZZ_CHECK(st_to_record(&g, &rec2, &err) == CODEC_OK);
  FUZZ_CHECK(fuzz_same_buf(&rec, &rec2));
  if (g.has_metadata) {
    FUZZ_CHECK(st_metadata_json(&g, &meta2, &err) == CODEC_OK);
    FUZZ_CHECK(fuzz_same_buf(&meta, &meta2));
  }
  /* The written file is a fixed point. */
  FUZZ_CHECK(record_to_st(&rec2, g.has_metadata ? &meta2 : NULL, &file2, &err) == CODEC_OK);
  FUZZ_CHECK(fuzz_same_buf(&file, &file2));
done:
  if (size > 8) {
    /* The header bytes as a metadata argument: an object of strings is
    ** written compactly and reads back as the same object. */
    record_t empty;
    buf_t mfile, m1, m2;
    record_init(&empty);
    buf_init(&mfile, UINT64_MAX);
    buf_init(&m1, UINT64_MAX);
    buf_init(&m2, UINT64_MAX);
    rc = st_from_record(&empty, (const char *)data + 8, size - 8, &mfile, &err);
    if (rc != CODEC_OK) {
      fuzz_check_error(rc, &err);
      FUZZ_CHECK(rc == CODEC_CORRUPT);
    } else {
      FUZZ_CHECK(st_parse(&h, mfile.p, mfile.n, &err) == CODEC_OK && h.has_metadata && h.n == 0);
      FUZZ_CHECK(st_metadata_json(&h, &m1, &err) == CODEC_OK);
      st_file_free(&h);
      buf_free(&mfile);
      buf_init(&mfile, UINT64_MAX);
      FUZZ_CHECK(st_from_record(&empty, (const char *)m1.p, m1.n, &mfile, &err) == CODEC_OK);
      FUZZ_CHECK(st_parse(&h, mfile.p, mfile.n, &err) == CODEC_OK);
      FUZZ_CHECK(st_metadata_json(&h, &m2, &err) == CODEC_OK && fuzz_same_buf(&m1, &m2));
    }
    buf_free(&mfile);
    buf_free(&m1);
    buf_free(&m2);
  }
  st_file_free(&f);
  st_file_free(&g);
  st_file_free(&h);
  buf_free(&rec);
  buf_free(&meta);
  buf_free(&file);
  buf_free(&rec2);
  buf_free(&meta2);
  buf_free(&file2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in;
  fuzz_alloc_setup();
  in.data = size ? data : (const uint8_t *)"";
  in.size = size;
  check_properties(in.data, size);
  fuzz_oom_check(pipeline, &in, fuzz_hash(data, size));
  return 0;
}
