/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_quote_key.c — keys quoted in error messages are always valid UTF-8,
** even when the key itself is not (messages are SQL text).
*/
#include "codec/record.h"
#include "unit.h"

TEST(quote_key_replaces_invalid_utf8) {
  char q[CODEC_QUOTE_MAX];
  codec_quote(q, sizeof(q), (const unsigned char *)"a\xff\xfe" "b\xc3\xa9\x01\xe5\xb1", 9);
  CHECK_STR(q, "a??b\xc3\xa9???");
  CHECK(codec_utf8_valid((const unsigned char *)q, strlen(q)));
}

TEST(quote_key_error_from_a_record_with_a_bad_key) {
  static const unsigned char blob[] = {0x0a, 0x06, 0x0a, 0x02, 0xff, 0xfe, 0x12, 0x05};
  record_t rec;
  codec_err err;
  record_init(&rec);
  CHECK(record_parse(&rec, blob, sizeof(blob), &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "record blob truncated at byte 8 (item 0, key '?\?')");
  record_clear(&rec);
}
