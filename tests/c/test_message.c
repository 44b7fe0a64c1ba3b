/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_message.c — unit tests of the Flower Message / Context codec
** (message.c): Flower's vectors, proto3 defaults, merged occurrences, map
** entries sorted with the last duplicate kept, error messages with their
** hints, and allocation failures at every step.
*/
#include "unit.h"

#include <stdlib.h>
#include <string.h>

#include "codec/message.h"

static int same(const void *a, uint64_t an, const void *b, uint64_t bn) {
  return an == bn && (an == 0 || memcmp(a, b, (size_t)an) == 0);
}

static int json_is(const buf_t *b, const char *want) {
  return b->rc == CODEC_OK && same(b->p, b->n, want, strlen(want));
}

TEST(message_vectors) {
  static const char *const names[] = {"instruction", "reply", "error_reply", "empty_content"};
  size_t f;
  for (f = 0; f < sizeof(names) / sizeof(names[0]); f++) {
    char path[128];
    uint64_t n, cn = 0;
    unsigned char *blob, *want = NULL;
    message_t m;
    codec_err err;
    buf_t out;
    snprintf(path, sizeof(path), "recorddict/messages/%s.pb", names[f]);
    blob = unit_read_file(path, &n);
    CHECK(blob);
    if (f != 2) {
      snprintf(path, sizeof(path), "recorddict/messages/%s.content.pb", names[f]);
      want = unit_read_file(path, &cn);
      CHECK(want);
    }
    CHECK(message_parse(&m, blob, n, &err) == CODEC_OK);
    CHECK(m.run_id == 13835058055282163719ull);
    CHECK(m.has_error == (f == 2));
    CHECK(m.ncontent == (f != 2));
    buf_init(&out, UINT64_MAX);
    if (m.ncontent) { /* Flower's bytes are canonical already */
      CHECK(message_content(&m, blob, n, &out, &err) == CODEC_OK);
      CHECK(same(buf_at(&out, 0), out.n, want, cn));
    }
    buf_free(&out);
    if (f == 2) {
      buf_init(&out, UINT64_MAX);
      message_metadata_json(&out, &m);
      CHECK(json_is(&out,
                    "{\"run_id\":13835058055282163719,\"message_id\":"
                    "\"b8258ff2aff6a4da31fc1e65c7505340d9dda2162d049a1897be32e9ee8f88cd\",\"src_node_id\":"
                    "1099511627793,\"dst_node_id\":1,\"reply_to_message_id\":"
                    "\"e0da3afc74116097c51abed8145cb54909169280d85518aac1d68b26df7a7551\",\"group_id\":\"3\","
                    "\"ttl\":43195.0,\"message_type\":\"train\",\"created_at\":1764000005.25,\"src_task_id\":null,"
                    "\"dst_task_id\":null,\"error\":{\"code\":3,"
                    "\"reason\":\"ClientApp raised: CUDA out of memory \xe2\x98\xb9\"}}"));
      buf_free(&out);
    }
    free(blob);
    free(want);
  }
}

TEST(message_defaults_and_merges) {
  /* metadata in three occurrences; content in two */
  static const unsigned char meta[] = {0x0a, 0x02, 0x08, 0x07, 0x0a, 0x02, 0x18, 0x01, 0x0a, 0x02, 0x08, 0x09};
  static const unsigned char two[] = {0x12, 0x07, 0x0a, 0x05, 0x0a, 0x01, 'a', 0x1a, 0x00,
                                      0x12, 0x07, 0x0a, 0x05, 0x0a, 0x01, 'b', 0x22, 0x00};
  message_t m;
  codec_err err;
  buf_t out;
  CHECK(message_parse(&m, (const unsigned char *)"", 0, &err) == CODEC_OK);
  CHECK(m.ncontent == 0 && !m.has_error);
  buf_init(&out, UINT64_MAX);
  message_metadata_json(&out, &m);
  CHECK(json_is(&out,
                "{\"run_id\":0,\"message_id\":\"\",\"src_node_id\":0,\"dst_node_id\":0,\"reply_to_message_id\":\"\","
                "\"group_id\":\"\",\"ttl\":0.0,\"message_type\":\"\",\"created_at\":0.0,\"src_task_id\":null,"
                "\"dst_task_id\":null,\"error\":null}"));
  buf_free(&out);
  CHECK(message_parse(&m, meta, sizeof(meta), &err) == CODEC_OK);
  CHECK(m.run_id == 9 && m.src_node_id == 1);
  CHECK(message_parse(&m, two, sizeof(two), &err) == CODEC_OK);
  CHECK(m.ncontent == 2);
  buf_init(&out, UINT64_MAX);
  CHECK(message_content(&m, two, sizeof(two), &out, &err) == CODEC_OK);
  CHECK(same(buf_at(&out, 0), out.n,
             "\x0a\x05\x0a\x01"
             "a\x1a\x00\x0a\x05\x0a\x01"
             "b\x22\x00",
             14));
  buf_free(&out);
}

TEST(context_vectors) {
  static const char *const names[] = {"serverapp", "clientapp", "empty_state"};
  size_t f;
  for (f = 0; f < sizeof(names) / sizeof(names[0]); f++) {
    char path[128];
    uint64_t n, sn;
    unsigned char *blob, *want;
    message_context_t c;
    codec_err err;
    buf_t out;
    snprintf(path, sizeof(path), "recorddict/contexts/%s.pb", names[f]);
    blob = unit_read_file(path, &n);
    snprintf(path, sizeof(path), "recorddict/contexts/%s.state.pb", names[f]);
    want = unit_read_file(path, &sn);
    CHECK(blob && want);
    message_context_init(&c);
    CHECK(message_context_parse(&c, blob, n, &err) == CODEC_OK);
    buf_init(&out, UINT64_MAX);
    CHECK(message_context_state(&c, blob, n, &out, &err) == CODEC_OK);
    CHECK(same(buf_at(&out, 0), out.n, want, sn));
    buf_free(&out);
    if (f == 1) {
      buf_init(&out, UINT64_MAX);
      message_context_json(&out, &c);
      CHECK(json_is(&out,
                    "{\"run_id\":13835058055282163719,\"node_id\":1099511627793,\"series_id\":0,"
                    "\"node_config\":{\"data-path\":"
                    "\"/data/\xc3\xbc\",\"num-partitions\":10,\"partition-id\":3},\"run_config\":{\"local-epochs\":2,"
                    "\"num-server-rounds\":10}}"));
      buf_free(&out);
    }
    message_context_clear(&c);
    free(blob);
    free(want);
  }
}

/* A run_config entry key=value (value a Scalar's bytes), appended. */
static void put_entry(buf_t *b, int map, const char *key, const unsigned char *val, size_t vn) {
  size_t kn = strlen(key);
  buf_putc(b, (char)(map << 3 | 2));
  buf_putc(b, (char)(2 + kn + 2 + vn));
  buf_putc(b, 0x0a);
  buf_putc(b, (char)kn);
  buf_append(b, key, kn);
  buf_putc(b, 0x12);
  buf_putc(b, (char)vn);
  buf_append(b, val, vn);
}

/* 20 entries in reverse key order, each key twice (the second wins). */
static void many_entries(buf_t *b) {
  int i, round;
  for (round = 0; round < 2; round++)
    for (i = 19; i >= 0; i--) {
      char key[8];
      unsigned char val[2] = {0x30, 0};
      snprintf(key, sizeof(key), "k%02d", i);
      val[1] = (unsigned char)(round * 100 + i);
      put_entry(b, 5, key, val, 2);
    }
}

TEST(context_sorted_last_wins) {
  message_context_t c;
  codec_err err;
  buf_t in, out;
  int i;
  buf_init(&in, UINT64_MAX);
  many_entries(&in);
  put_entry(&in, 3, "z", (const unsigned char *)"\x68\x01", 2);
  CHECK(in.rc == CODEC_OK);
  message_context_init(&c);
  CHECK(message_context_parse(&c, in.p, in.n, &err) == CODEC_OK);
  CHECK(c.n == 21);
  CHECK(c.entries[0].map == 3);
  for (i = 1; i < 21; i++) {
    CHECK(c.entries[i].map == 5 && c.entries[i].type == VALREC_UINT64);
    CHECK(c.entries[i].v.u == (uint64_t)(100 + i - 1));
  }
  buf_init(&out, UINT64_MAX);
  message_context_json(&out, &c);
  {
    static const char head[] =
        "{\"run_id\":0,\"node_id\":0,\"series_id\":0,\"node_config\":{\"z\":true},"
        "\"run_config\":{\"k00\":100,";
    CHECK(out.rc == CODEC_OK && out.n > sizeof(head) && memcmp(out.p, head, sizeof(head) - 1) == 0);
  }
  buf_free(&out);
  message_context_clear(&c);
  buf_free(&in);
}

static const char *msg_error(const void *blob, uint64_t n, int context) {
  static codec_err err;
  int rc;
  if (context) {
    message_context_t c;
    message_context_init(&c);
    rc = message_context_parse(&c, blob, n, &err);
    if (rc == CODEC_OK) {
      buf_t out;
      buf_init(&out, UINT64_MAX);
      rc = message_context_state(&c, blob, n, &out, &err);
      buf_free(&out);
    }
    message_context_clear(&c);
  } else {
    message_t m;
    rc = message_parse(&m, blob, n, &err);
    if (rc == CODEC_OK && m.ncontent) {
      buf_t out;
      buf_init(&out, UINT64_MAX);
      rc = message_content(&m, blob, n, &out, &err);
      buf_free(&out);
    }
  }
  return rc == CODEC_OK ? "" : err.msg;
}

TEST(message_errors) {
  CHECK_STR(msg_error("\x0a", 1, 0), "message truncated at byte 1");
  CHECK_STR(msg_error("\x0a\x02\x10\x01", 4, 0),
            "message metadata has wrong wire type 0 for Metadata.message_id at byte 2");
  CHECK_STR(msg_error("\x0a\x03\x39\x00\x00", 5, 0), "message metadata truncated at byte 5");
  CHECK_STR(msg_error("\x1a\x03\x12\x01\xff", 5, 0), "message error has a reason that is not valid UTF-8 at byte 4");
  CHECK_STR(msg_error("\x12\x01\x0a", 3, 0), "message content (at byte 2): record dict truncated at byte 1 (item 0)");
  CHECK_STR(msg_error("\x08\x01", 2, 0),
            "message has wrong wire type 0 for Message.metadata at byte 0 (it reads as a Context, not a Message)");
  /* a RecordDict given as a Message */
  CHECK_STR(msg_error("\x0a\x05\x0a\x01m\x1a\x00", 7, 0),
            "message metadata has wrong wire type 2 for Metadata.run_id at byte 2 (it reads as a RecordDict or an "
            "ArrayRecord, not a Message)");
  CHECK_STR(msg_error("\x2a\x04\x0a\x02lr", 6, 1),
            "context run_config has an entry without a value at byte 2 (item 0, key 'lr')");
  CHECK_STR(msg_error("\x2a\x06\x0a\x02lr\x12\x00", 8, 1),
            "context run_config has an entry without a value at byte 2 (item 0, key 'lr')");
  CHECK_STR(msg_error("\x2a\x08\x12\x02\x70\x01\x0a\x02lr", 10, 1),
            "context run_config has wrong wire type 0 for Scalar.string at byte 4 (item 0, key 'lr')");
  CHECK_STR(msg_error("\x1a\x07\x0a\x01\xff\x12\x02\x30\x01", 9, 1),
            "context node_config has a key that is not valid UTF-8 at byte 2 (item 0)");
  CHECK_STR(msg_error("\x08\x01\x2a\x07\x0a\x01"
                      "a\x12\x02\x30\x01\x2a\x07\x0a\x02lr\x12\x02\x30",
                      20, 1),
            "context run_config truncated at byte 20 (item 1, key 'lr')");
  CHECK_STR(msg_error("\x22\x01\x0a", 3, 1), "context state (at byte 2): record dict truncated at byte 1 (item 0)");
  CHECK_STR(msg_error("\x22\x00\x22\x01\x0a", 5, 1),
            "context state (2 occurrences merged): record dict truncated at byte 1 (item 0)");
}

TEST(message_oom) {
  static const unsigned char two[] = {0x12, 0x07, 0x0a, 0x05, 0x0a, 0x01, 'a', 0x1a, 0x00,
                                      0x12, 0x07, 0x0a, 0x05, 0x0a, 0x01, 'b', 0x22, 0x00};
  buf_t in;
  long k, live = unit_live_allocs();
  buf_init(&in, UINT64_MAX);
  many_entries(&in);
  buf_append(&in, "\x22\x00\x22\x00\x08", 5); /* and a broken tail: the hint probes too */
  CHECK(in.rc == CODEC_OK);
  for (k = 0; k < 64; k++) {
    message_context_t c;
    message_t m;
    codec_err err;
    buf_t out;
    int rc1, rc2, rc3;
    unit_fail_alloc_after(k);
    message_context_init(&c);
    rc1 = message_context_parse(&c, in.p, in.n - 1, &err);
    if (rc1 == CODEC_OK) {
      buf_init(&out, UINT64_MAX);
      message_context_json(&out, &c);
      rc1 = out.rc;
      buf_free(&out);
    }
    message_context_clear(&c);
    rc2 = message_context_parse(&c, in.p, in.n, &err); /* fails: truncated */
    message_context_clear(&c);
    rc3 = message_parse(&m, two, sizeof(two), &err);
    if (rc3 == CODEC_OK) {
      buf_init(&out, UINT64_MAX);
      rc3 = message_content(&m, two, sizeof(two), &out, &err);
      buf_free(&out);
    }
    unit_fail_alloc_after(-1);
    CHECK(rc1 == CODEC_OK || rc1 == CODEC_NOMEM);
    CHECK(rc2 == CODEC_CORRUPT || rc2 == CODEC_NOMEM);
    CHECK(rc3 == CODEC_OK || rc3 == CODEC_NOMEM);
    CHECK(unit_live_allocs() == live + 1); /* `in` itself */
    if (!unit_alloc_failed()) break;
  }
  CHECK(k < 64);
  buf_free(&in);
}
