/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_sha256.c — SHA-256 against the FIPS 180-2 / NIST example vectors, and
** streaming in uneven pieces against one-shot hashing.
*/
#include <stdlib.h>

#include "codec/sha256.h"
#include "unit.h"

static void hex_of(const void *data, uint64_t n, char *out) {
  unsigned char d[SHA256_DIGEST_SIZE];
  sha256(data, n, d);
  sha256_hex(d, out);
}

TEST(sha256_empty_string) {
  char hex[SHA256_HEX_SIZE];
  hex_of("", 0, hex);
  CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(sha256_abc) {
  char hex[SHA256_HEX_SIZE];
  hex_of("abc", 3, hex);
  CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(sha256_448_bit_message) {
  static const char msg[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  char hex[SHA256_HEX_SIZE];
  hex_of(msg, sizeof(msg) - 1, hex);
  CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(sha256_896_bit_message) {
  static const char msg[] =
      "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
  char hex[SHA256_HEX_SIZE];
  hex_of(msg, sizeof(msg) - 1, hex);
  CHECK_STR(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(sha256_one_million_a) {
  unsigned char *a = malloc(1000000);
  char hex[SHA256_HEX_SIZE];
  sha256_ctx c;
  unsigned char d[SHA256_DIGEST_SIZE];
  int i;
  CHECK(a != NULL);
  memset(a, 'a', 1000000);
  hex_of(a, 1000000, hex);
  free(a);
  CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  /* the same, fed one byte at a time through the streaming interface */
  sha256_init(&c);
  for (i = 0; i < 1000000; i++) sha256_update(&c, "a", 1);
  sha256_final(&c, d);
  sha256_hex(d, hex);
  CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(sha256_streaming_matches_one_shot_at_every_split) {
  unsigned char msg[200], one[SHA256_DIGEST_SIZE], two[SHA256_DIGEST_SIZE];
  size_t len, cut;
  for (len = 0; len < sizeof(msg); len++) msg[len] = (unsigned char)(len * 7 + 3);
  /* lengths around the 55/56/64-byte padding boundaries, every cut point */
  for (len = 50; len <= 130; len++) {
    sha256(msg, len, one);
    for (cut = 0; cut <= len; cut++) {
      sha256_ctx c;
      sha256_init(&c);
      sha256_update(&c, msg, cut);
      sha256_update(&c, msg + cut, len - cut);
      sha256_final(&c, two);
      CHECK(memcmp(one, two, sizeof(one)) == 0);
    }
  }
}

TEST(sha256_hex_round_trip) {
  unsigned char d[SHA256_DIGEST_SIZE], back[SHA256_DIGEST_SIZE];
  char hex[SHA256_HEX_SIZE];
  sha256("abc", 3, d);
  sha256_hex(d, hex);
  CHECK(sha256_from_hex(hex, 64, back) == 0 && memcmp(d, back, sizeof(d)) == 0);
  CHECK(sha256_from_hex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD", 64, back) == 0);
  CHECK(memcmp(d, back, sizeof(d)) == 0);
  CHECK(sha256_from_hex(hex, 63, back) == -1);
  hex[10] = 'g';
  CHECK(sha256_from_hex(hex, 64, back) == -1);
}
