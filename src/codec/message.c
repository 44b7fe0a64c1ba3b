/* SPDX-License-Identifier: Apache-2.0 */
/*
** message.c — Flower Message / Context protobuf reader and their JSON
** (see message.h for the messages and the rules).
*/
#include "codec/message.h"

#include "codec/json.h"
#include "codec/pb.h"
#include "codec/record.h"
#include "codec/recorddict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char empty_bytes[1] = {0};

static uint64_t get_le64(const unsigned char *p) {
  uint64_t v = 0;
  int k;
  for (k = 7; k >= 0; k--) v = (v << 8) | p[k];
  return v;
}

/* "<blob> <problem>" at byte `at`, with the entry's place. */
static int msg_fail(const pb_ctx *ctx, const char *problem, uint64_t at) {
  char what[200];
  snprintf(what, sizeof(what), "%s %s", ctx->blob, problem);
  return pb_error(ctx, CODEC_CORRUPT, what, at);
}

/* --- typed fields (tag already read at `at`) ------------------------------- */

static int get_varint(pb_reader *r, const pb_ctx *ctx, const char *name, int wt, uint64_t at, uint64_t *v) {
  uint64_t vat = r->pos;
  int rc;
  if (wt != PB_WT_VARINT) return pb_wrong_type(ctx, name, wt, at);
  if ((rc = pb_varint(r, v)) != PB_OK) return pb_read_error(ctx, rc, r, vat);
  return CODEC_OK;
}

static int get_double(pb_reader *r, const pb_ctx *ctx, const char *name, int wt, uint64_t at, double *d) {
  uint64_t u;
  if (wt != PB_WT_I64) return pb_wrong_type(ctx, name, wt, at);
  if (r->end - r->pos < 8) return pb_read_error(ctx, PB_TRUNCATED, r, r->pos);
  u = get_le64(r->blob + r->pos);
  memcpy(d, &u, sizeof(*d));
  r->pos += 8;
  return CODEC_OK;
}

/* A string field (noun names it in the UTF-8 message) or, noun NULL, a
** bytes field. */
static int get_bytes(pb_reader *r, const pb_ctx *ctx, const char *name, const char *noun, int wt, uint64_t at,
                     codec_span *out) {
  uint64_t s, len;
  int rc;
  if (wt != PB_WT_LEN) return pb_wrong_type(ctx, name, wt, at);
  if ((rc = pb_len(r, ctx, &s, &len)) != CODEC_OK) return rc;
  if (noun && !codec_utf8_valid(r->blob + s, len)) {
    char what[120];
    snprintf(what, sizeof(what), "has a %s that is not valid UTF-8", noun);
    return msg_fail(ctx, what, s);
  }
  out->p = len ? r->blob + s : empty_bytes;
  out->n = len;
  return CODEC_OK;
}

/* A message field's payload: [*s, *s + *len). */
static int get_message(pb_reader *r, const pb_ctx *ctx, const char *name, int wt, uint64_t at, uint64_t *s,
                       uint64_t *len) {
  if (wt != PB_WT_LEN) return pb_wrong_type(ctx, name, wt, at);
  return pb_len(r, ctx, s, len);
}

/* --- Message ----------------------------------------------------------------- */

/* One Metadata occurrence, read into m over what earlier ones set (merge). */
static int read_metadata(message_t *m, const unsigned char *blob, uint64_t start, uint64_t end, codec_err *err) {
  pb_reader r = {blob, start, end};
  pb_ctx ctx = {err, "message metadata", -1, {NULL, 0}};
  int rc;
  while (r.pos < r.end) {
    uint64_t field, at = r.pos;
    int wt;
    if ((rc = pb_tag(&r, &ctx, &field, &wt)) != CODEC_OK) return rc;
    switch (field) {
      case 1: rc = get_varint(&r, &ctx, "Metadata.run_id", wt, at, &m->run_id); break;
      case 2: rc = get_bytes(&r, &ctx, "Metadata.message_id", "message_id", wt, at, &m->message_id); break;
      case 3: rc = get_varint(&r, &ctx, "Metadata.src_node_id", wt, at, &m->src_node_id); break;
      case 4: rc = get_varint(&r, &ctx, "Metadata.dst_node_id", wt, at, &m->dst_node_id); break;
      case 5:
        rc =
            get_bytes(&r, &ctx, "Metadata.reply_to_message_id", "reply_to_message_id", wt, at, &m->reply_to_message_id);
        break;
      case 6: rc = get_bytes(&r, &ctx, "Metadata.group_id", "group_id", wt, at, &m->group_id); break;
      case 7: rc = get_double(&r, &ctx, "Metadata.ttl", wt, at, &m->ttl); break;
      case 8: rc = get_bytes(&r, &ctx, "Metadata.message_type", "message_type", wt, at, &m->message_type); break;
      case 9: rc = get_double(&r, &ctx, "Metadata.created_at", wt, at, &m->created_at); break;
      case 10:
        rc = get_varint(&r, &ctx, "Metadata.src_task_id", wt, at, &m->src_task_id);
        m->has_src_task_id = 1;
        break;
      case 11:
        rc = get_varint(&r, &ctx, "Metadata.dst_task_id", wt, at, &m->dst_task_id);
        m->has_dst_task_id = 1;
        break;
      default: rc = pb_skip(&r, &ctx, field, wt, 0, at);
    }
    if (rc) return rc;
  }
  return CODEC_OK;
}

static int read_error(message_t *m, const unsigned char *blob, uint64_t start, uint64_t end, codec_err *err) {
  pb_reader r = {blob, start, end};
  pb_ctx ctx = {err, "message error", -1, {NULL, 0}};
  int rc;
  m->has_error = 1;
  while (r.pos < r.end) {
    uint64_t field, at = r.pos, u;
    int wt;
    if ((rc = pb_tag(&r, &ctx, &field, &wt)) != CODEC_OK) return rc;
    if (field == 1) {
      if ((rc = get_varint(&r, &ctx, "Error.code", wt, at, &u)) != CODEC_OK) return rc;
      m->error_code = (int64_t)((u >> 1) ^ (~(u & 1) + 1)); /* zigzag */
    } else if (field == 2) {
      if ((rc = get_bytes(&r, &ctx, "Error.reason", "reason", wt, at, &m->error_reason)) != CODEC_OK) return rc;
    } else if ((rc = pb_skip(&r, &ctx, field, wt, 0, at)) != CODEC_OK) {
      return rc;
    }
  }
  return CODEC_OK;
}

/* A hint for bytes of another Flower type given where a Message or Context
** is expected (only on the error path: it parses the bytes again). */
static void add_hint(const unsigned char *blob, uint64_t n, int want_message, codec_err *err) {
  const char *what = NULL, *want = want_message ? "Message" : "Context";
  char hint[96];
  codec_err quiet;
  recorddict_t rd;
  record_t rec;
  size_t len = strlen(err->msg);
  /* an ArrayRecord reads as a RecordDict too (its Array as an array record) */
  recorddict_init(&rd);
  if (recorddict_parse(&rd, blob, n, &quiet) == CODEC_OK && rd.n > 0) what = "a RecordDict or an ArrayRecord";
  recorddict_clear(&rd);
  record_init(&rec);
  if (!what && record_parse(&rec, blob, n, &quiet) == CODEC_OK && rec.n > 0) what = "an ArrayRecord";
  record_clear(&rec);
  if (!what && want_message) {
    message_context_t c;
    message_context_init(&c);
    if (message_context_parse(&c, blob, n, NULL) == CODEC_OK &&
        (c.run_id || c.node_id || c.series_id || c.n || c.nstate))
      what = "a Context";
    message_context_clear(&c);
  } else if (!what) {
    message_t m;
    /* anything of length-delimited fields reads as a Message: ask for a type */
    if (message_parse(&m, blob, n, NULL) == CODEC_OK && m.message_type.n) what = "a Message";
  }
  if (!what) return;
  snprintf(hint, sizeof(hint), " (it reads as %s, not a %s)", what, want);
  if (len + strlen(hint) < sizeof(err->msg)) memcpy(err->msg + len, hint, strlen(hint) + 1);
}

static int parse_message(message_t *m, const unsigned char *blob, uint64_t n, codec_err *err) {
  pb_reader r = {blob, 0, n};
  pb_ctx ctx = {err, "message", -1, {NULL, 0}};
  int rc;
  while (r.pos < r.end) {
    uint64_t field, at = r.pos, s, len;
    int wt;
    if ((rc = pb_tag(&r, &ctx, &field, &wt)) != CODEC_OK) return rc;
    if (field == 1) {
      if ((rc = get_message(&r, &ctx, "Message.metadata", wt, at, &s, &len)) != CODEC_OK) return rc;
      if ((rc = read_metadata(m, blob, s, s + len, err)) != CODEC_OK) return rc;
    } else if (field == 2) {
      if ((rc = get_message(&r, &ctx, "Message.content", wt, at, &s, &len)) != CODEC_OK) return rc;
      if (!m->ncontent) {
        m->content.p = len ? blob + s : empty_bytes;
        m->content.n = len;
        m->content_at = s;
      }
      if (m->ncontent < 0x3fffffff) m->ncontent++;
    } else if (field == 3) {
      if ((rc = get_message(&r, &ctx, "Message.error", wt, at, &s, &len)) != CODEC_OK) return rc;
      if ((rc = read_error(m, blob, s, s + len, err)) != CODEC_OK) return rc;
    } else if ((rc = pb_skip(&r, &ctx, field, wt, 0, at)) != CODEC_OK) {
      return rc;
    }
  }
  return CODEC_OK;
}

int message_parse(message_t *m, const unsigned char *blob, uint64_t n, codec_err *err) {
  int rc;
  memset(m, 0, sizeof(*m));
  m->message_id.p = m->reply_to_message_id.p = m->group_id.p = m->message_type.p = empty_bytes;
  m->error_reason.p = m->content.p = empty_bytes;
  rc = parse_message(m, blob, n, err);
  if (rc == CODEC_CORRUPT && err) add_hint(blob, n, 1, err);
  return rc;
}

/* Every top-level occurrence of length-delimited field f, appended to out
** (the bytes were parsed already, so this cannot fail but for memory). */
static void concat_field(const unsigned char *blob, uint64_t n, uint64_t f, buf_t *out) {
  pb_reader r = {blob, 0, n};
  pb_ctx quiet = {NULL, "", -1, {NULL, 0}};
  while (r.pos < r.end) {
    uint64_t field, at = r.pos, s, len;
    int wt;
    if (pb_tag(&r, &quiet, &field, &wt) != CODEC_OK) return;
    if (field == f && wt == PB_WT_LEN) {
      if (pb_len(&r, &quiet, &s, &len) != CODEC_OK) return;
      buf_append(out, blob + s, len);
    } else if (pb_skip(&r, &quiet, field, wt, 0, at) != CODEC_OK) {
      return;
    }
  }
}

/* The RecordDict in field f (all its occurrences, concatenated),
** re-encoded into out. */
static int merged_recorddict(const unsigned char *blob, uint64_t n, uint64_t f, int count, codec_span first,
                             uint64_t first_at, const char *what, buf_t *out, codec_err *err) {
  codec_span bytes = first;
  codec_err inner;
  buf_t cat;
  int rc;
  buf_init(&cat, out->limit);
  if (count > 1) {
    concat_field(blob, n, f, &cat);
    if (cat.rc) {
      rc = codec_fail_rc(err, cat.rc);
      goto done;
    }
    bytes.p = buf_at(&cat, 0);
    bytes.n = cat.n;
  }
  rc = recorddict_canonical(out, bytes.p, bytes.n, &inner);
  if (rc == CODEC_CORRUPT) {
    if (count <= 1)
      codec_fail(err, rc, "%s (at byte %llu): %s", what, (unsigned long long)first_at, inner.msg);
    else
      codec_fail(err, rc, "%s (%d occurrences merged): %s", what, count, inner.msg);
  } else if (rc) {
    codec_fail_rc(err, rc);
  }
done:
  buf_free(&cat);
  return rc;
}

int message_content(const message_t *m, const unsigned char *blob, uint64_t n, buf_t *out, codec_err *err) {
  return merged_recorddict(blob, n, 2, m->ncontent, m->content, m->content_at, "message content", out, err);
}

static void put_string(buf_t *out, const char *key, codec_span s) {
  buf_printf(out, ",\"%s\":", key);
  json_put_string(out, s.p, s.n);
}

static void put_double(buf_t *out, const char *key, double d) {
  valrec_elem e;
  memset(&e, 0, sizeof(e));
  e.d = d;
  buf_printf(out, ",\"%s\":", key);
  valrec_scalar_json(out, VALREC_DOUBLE, &e);
}

static void put_optional(buf_t *out, const char *key, int has, uint64_t v) {
  if (has)
    buf_printf(out, ",\"%s\":%llu", key, (unsigned long long)v);
  else
    buf_printf(out, ",\"%s\":null", key);
}

void message_metadata_json(buf_t *out, const message_t *m) {
  buf_printf(out, "{\"run_id\":%llu", (unsigned long long)m->run_id);
  put_string(out, "message_id", m->message_id);
  buf_printf(out, ",\"src_node_id\":%llu,\"dst_node_id\":%llu", (unsigned long long)m->src_node_id,
             (unsigned long long)m->dst_node_id);
  put_string(out, "reply_to_message_id", m->reply_to_message_id);
  put_string(out, "group_id", m->group_id);
  put_double(out, "ttl", m->ttl);
  put_string(out, "message_type", m->message_type);
  put_double(out, "created_at", m->created_at);
  put_optional(out, "src_task_id", m->has_src_task_id, m->src_task_id);
  put_optional(out, "dst_task_id", m->has_dst_task_id, m->dst_task_id);
  if (m->has_error) {
    buf_printf(out, ",\"error\":{\"code\":%lld,\"reason\":", (long long)m->error_code);
    json_put_string(out, m->error_reason.p, m->error_reason.n);
    buf_puts(out, "}}");
  } else {
    buf_puts(out, ",\"error\":null}");
  }
}

/* --- Context ----------------------------------------------------------------- */

void message_context_init(message_context_t *c) {
  memset(c, 0, sizeof(*c));
  c->entries = c->small;
  c->cap = (int)(sizeof(c->small) / sizeof(c->small[0]));
  c->state.p = empty_bytes;
}

void message_context_clear(message_context_t *c) {
  if (c->entries != c->small) codec_free(c->entries);
  message_context_init(c);
}

static message_entry *push(message_context_t *c) {
  if (c->n == c->cap) {
    int cap = c->cap * 2;
    message_entry *p;
    if (cap > 0x3fffffff) return NULL;
    if (c->entries == c->small) {
      p = codec_malloc((uint64_t)cap * sizeof(message_entry));
      if (p) memcpy(p, c->small, sizeof(c->small));
    } else {
      p = codec_realloc(c->entries, (uint64_t)cap * sizeof(message_entry));
    }
    if (!p) return NULL;
    c->entries = p;
    c->cap = cap;
  }
  return &c->entries[c->n++];
}

/* One Scalar occurrence, over what earlier ones set (the last member wins). */
static int parse_scalar(message_entry *e, const unsigned char *blob, uint64_t start, uint64_t end, const pb_ctx *ctx) {
  pb_reader r = {blob, start, end};
  int rc;
  while (r.pos < r.end) {
    uint64_t field, at = r.pos, u;
    int wt, type;
    valrec_elem v;
    memset(&v, 0, sizeof(v));
    if ((rc = pb_tag(&r, ctx, &field, &wt)) != CODEC_OK) return rc;
    switch (field) {
      case 1: type = VALREC_DOUBLE, rc = get_double(&r, ctx, "Scalar.double", wt, at, &v.d); break;
      case 6: type = VALREC_UINT64, rc = get_varint(&r, ctx, "Scalar.uint64", wt, at, &v.u); break;
      case 8:
        type = VALREC_SINT64, rc = get_varint(&r, ctx, "Scalar.sint64", wt, at, &u);
        v.i = (int64_t)((u >> 1) ^ (~(u & 1) + 1));
        break;
      case 13:
        type = VALREC_BOOL, rc = get_varint(&r, ctx, "Scalar.bool", wt, at, &u);
        v.u = u != 0;
        break;
      case 14: type = VALREC_STRING, rc = get_bytes(&r, ctx, "Scalar.string", "string value", wt, at, &v.s); break;
      case 15: type = VALREC_BYTES, rc = get_bytes(&r, ctx, "Scalar.bytes", NULL, wt, at, &v.s); break;
      default: type = VALREC_NONE, rc = pb_skip(&r, ctx, field, wt, 0, at);
    }
    if (rc) return rc;
    if (type != VALREC_NONE) {
      e->type = type;
      e->v = v;
    }
  }
  return CODEC_OK;
}

/* One map entry. The key is found first, so value errors can name it. */
static int parse_entry(message_entry *e, const unsigned char *blob, uint64_t start, uint64_t end, pb_ctx *ctx) {
  pb_reader r = {blob, start, end};
  int rc;
  e->key.p = empty_bytes;
  e->key.n = 0;
  e->type = VALREC_NONE;
  ctx->key.p = NULL;
  while (r.pos < r.end) {
    uint64_t field, at = r.pos;
    int wt;
    if ((rc = pb_tag(&r, ctx, &field, &wt)) != CODEC_OK) return rc;
    if (field == 1) {
      if (wt != PB_WT_LEN) return pb_wrong_type(ctx, "the entry key", wt, at);
      if ((rc = pb_len(&r, ctx, &at, &e->key.n)) != CODEC_OK) return rc;
      e->key.p = e->key.n ? blob + at : empty_bytes;
      ctx->key.p = codec_utf8_valid(e->key.p, e->key.n) ? e->key.p : NULL; /* for the messages */
      ctx->key.n = e->key.n;
    } else if ((rc = pb_skip(&r, ctx, field, wt, 0, at)) != CODEC_OK) {
      return rc;
    }
  }
  if (!codec_utf8_valid(e->key.p, e->key.n)) {
    ctx->key.p = NULL;
    return msg_fail(ctx, "has a key that is not valid UTF-8", start);
  }
  ctx->key = e->key;
  r.pos = start;
  while (r.pos < r.end) { /* the values, now that the structure is known good */
    uint64_t field, at = r.pos, s, len;
    int wt;
    if ((rc = pb_tag(&r, ctx, &field, &wt)) != CODEC_OK) return rc;
    if (field == 2) {
      if ((rc = get_message(&r, ctx, "the entry value", wt, at, &s, &len)) != CODEC_OK) return rc;
      if ((rc = parse_scalar(e, blob, s, s + len, ctx)) != CODEC_OK) return rc;
    } else if ((rc = pb_skip(&r, ctx, field, wt, 0, at)) != CODEC_OK) {
      return rc;
    }
  }
  if (e->type == VALREC_NONE) return msg_fail(ctx, "has an entry without a value", start);
  return CODEC_OK;
}

static int entry_cmp(const void *pa, const void *pb) {
  const message_entry *a = pa, *b = pb;
  uint64_t n = a->key.n < b->key.n ? a->key.n : b->key.n;
  int c;
  if (a->map != b->map) return a->map < b->map ? -1 : 1;
  if ((c = n ? memcmp(a->key.p, b->key.p, (size_t)n) : 0) != 0) return c;
  if (a->key.n != b->key.n) return a->key.n < b->key.n ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

static int parse_context(message_context_t *c, const unsigned char *blob, uint64_t n, codec_err *err) {
  pb_reader r = {blob, 0, n};
  pb_ctx top = {err, "context", -1, {NULL, 0}};
  int rc, count[2] = {0, 0};
  while (r.pos < r.end) {
    uint64_t field, at = r.pos, s, len;
    int wt;
    if ((rc = pb_tag(&r, &top, &field, &wt)) != CODEC_OK) return rc;
    if (field == 1) {
      rc = get_varint(&r, &top, "Context.run_id", wt, at, &c->run_id);
    } else if (field == 2) {
      rc = get_varint(&r, &top, "Context.node_id", wt, at, &c->node_id);
    } else if (field == 6) {
      rc = get_varint(&r, &top, "Context.series_id", wt, at, &c->series_id);
    } else if (field == 3 || field == 5) {
      int which = field == 5;
      pb_ctx ctx = {err, which ? "context run_config" : "context node_config", count[which], {NULL, 0}};
      message_entry *e;
      if ((rc = get_message(&r, &top, which ? "Context.run_config" : "Context.node_config", wt, at, &s, &len)) !=
          CODEC_OK)
        return rc;
      if (!(e = push(c))) return codec_nomem(err);
      memset(e, 0, sizeof(*e));
      e->map = (int)field;
      e->index = count[which];
      if (count[which] < 0x3fffffff) count[which]++;
      rc = parse_entry(e, blob, s, s + len, &ctx);
    } else if (field == 4) {
      if ((rc = get_message(&r, &top, "Context.state", wt, at, &s, &len)) != CODEC_OK) return rc;
      if (!c->nstate) {
        c->state.p = len ? blob + s : empty_bytes;
        c->state.n = len;
        c->state_at = s;
      }
      if (c->nstate < 0x3fffffff) c->nstate++;
    } else {
      rc = pb_skip(&r, &top, field, wt, 0, at);
    }
    if (rc) return rc;
  }
  /* by map and key; of a key's entries, the last one on the wire wins */
  if (c->n > 1) {
    int i, k = 0;
    qsort(c->entries, (size_t)c->n, sizeof(message_entry), entry_cmp);
    for (i = 0; i < c->n; i++) {
      const message_entry *a = &c->entries[i], *b = i + 1 < c->n ? &c->entries[i + 1] : NULL;
      if (b && a->map == b->map && a->key.n == b->key.n &&
          (!a->key.n || memcmp(a->key.p, b->key.p, (size_t)a->key.n) == 0))
        continue;
      c->entries[k++] = *a;
    }
    c->n = k;
  }
  return CODEC_OK;
}

int message_context_parse(message_context_t *c, const unsigned char *blob, uint64_t n, codec_err *err) {
  int rc;
  message_context_clear(c);
  rc = parse_context(c, blob, n, err);
  if (rc == CODEC_CORRUPT && err) add_hint(blob, n, 0, err);
  return rc;
}

int message_context_state(const message_context_t *c, const unsigned char *blob, uint64_t n, buf_t *out,
                          codec_err *err) {
  return merged_recorddict(blob, n, 4, c->nstate, c->state, c->state_at, "context state", out, err);
}

static void put_map(buf_t *out, const message_context_t *c, int map) {
  int i, first = 1;
  buf_putc(out, '{');
  for (i = 0; i < c->n; i++) {
    const message_entry *e = &c->entries[i];
    if (e->map != map) continue;
    if (!first) buf_putc(out, ',');
    first = 0;
    json_put_string(out, e->key.p, e->key.n);
    buf_putc(out, ':');
    valrec_scalar_json(out, e->type, &e->v);
  }
  buf_putc(out, '}');
}

void message_context_json(buf_t *out, const message_context_t *c) {
  buf_printf(out,
             "{\"run_id\":%llu,\"node_id\":%llu,\"series_id\":%llu,\"node_config\":", (unsigned long long)c->run_id,
             (unsigned long long)c->node_id, (unsigned long long)c->series_id);
  put_map(out, c, 3);
  buf_puts(out, ",\"run_config\":");
  put_map(out, c, 5);
  buf_putc(out, '}');
}
