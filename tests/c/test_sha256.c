/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_sha256.c — SHA-256 against the FIPS 180-4 example vectors and CAVP
** short messages, every length 0..300, streaming in uneven pieces and two
** messages side by side (sha256_update2), on
** both compression paths: the portable code and, when the CPU has the SHA
** extensions, SHA-NI (sha256_force_portable switches between them).
*/
#include <stdlib.h>

#include "codec/sha256.h"
#include "unit.h"

/* Select a path: 1 when it is the one now in use (SHA-NI may be missing). */
static int use_path(int ni) {
  sha256_force_portable(!ni);
  return sha256_accelerated() == ni;
}

static void hex_of(const void *data, uint64_t n, char *out) {
  unsigned char d[SHA256_DIGEST_SIZE];
  sha256(data, n, d);
  sha256_hex(d, out);
}

/* Hash data fed in pieces whose sizes cycle through `sizes` (0-terminated). */
static void hash_in_pieces(const unsigned char *data, size_t len, const size_t *sizes,
                           unsigned char d[SHA256_DIGEST_SIZE]) {
  sha256_ctx c;
  size_t off = 0, k = 0;
  sha256_init(&c);
  while (off < len) {
    size_t take = sizes[k] < len - off ? sizes[k] : len - off;
    sha256_update(&c, data + off, take);
    off += take;
    if (!sizes[++k]) k = 0;
  }
  sha256_final(&c, d);
}

static const char million_a[] = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";

/* The FIPS 180-4 examples and two CAVP SHA256ShortMsg vectors. */
static void known_vectors(void) {
  static const char m448[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  static const char m896[] =
      "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrst"
      "u";
  char hex[SHA256_HEX_SIZE];
  hex_of("", 0, hex);
  CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  hex_of("abc", 3, hex);
  CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  hex_of(m448, sizeof(m448) - 1, hex);
  CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  hex_of(m896, sizeof(m896) - 1, hex);
  CHECK_STR(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  hex_of("\xd3", 1, hex);
  CHECK_STR(hex, "28969cdfa74a12c82f3bad960b0b000aca2ac329deea5c2328ebc6f2ba9802c1");
  hex_of("\x11\xaf", 2, hex);
  CHECK_STR(hex, "5ca7133fa735326081558ac312c620eeca9970d1e70a4b95533d956f072d1f98");
}

/* One million 'a': one shot, from an odd address, a byte at a time, and in
** odd-sized pieces. */
static void one_million_a(void) {
  static const size_t odd[] = {1, 3, 7, 61, 63, 65, 127, 129, 4097, 0};
  unsigned char *a = malloc(1000001), d[SHA256_DIGEST_SIZE];
  char hex[SHA256_HEX_SIZE];
  sha256_ctx c;
  int i, ok;
  CHECK(a != NULL);
  memset(a, 'a', 1000001);
  hex_of(a, 1000000, hex);
  ok = strcmp(hex, million_a) == 0;
  hex_of(a + 1, 1000000, hex);
  ok = ok && strcmp(hex, million_a) == 0;
  hash_in_pieces(a + 1, 1000000, odd, d);
  ok = ok && strcmp(sha256_hex(d, hex), million_a) == 0;
  free(a);
  CHECK(ok);
  sha256_init(&c);
  for (i = 0; i < 1000000; i++) sha256_update(&c, "a", 1);
  sha256_final(&c, d);
  CHECK_STR(sha256_hex(d, hex), million_a);
}

static unsigned char pattern(size_t i) { return (unsigned char)(((i * 131 + 7) ^ (i >> 3)) & 0xff); }

/* Every length 0..300 (all padding cases, up to four blocks plus a tail),
** at two alignments and fed in odd pieces. The digest of all 301 digests
** comes from Python's hashlib over the same bytes. */
static void every_length(void) {
  static const size_t odd[] = {1, 5, 63, 2, 64, 17, 65, 0};
  unsigned char msg[302], d[SHA256_DIGEST_SIZE], d2[SHA256_DIGEST_SIZE], d3[SHA256_DIGEST_SIZE];
  char hex[SHA256_HEX_SIZE];
  sha256_ctx all;
  size_t len;
  for (len = 0; len < 301; len++) msg[len] = pattern(len);
  sha256_init(&all);
  for (len = 0; len <= 300; len++) {
    sha256(msg, len, d);
    memmove(msg + 1, msg, 301);
    sha256(msg + 1, len, d2);
    memmove(msg, msg + 1, 301);
    hash_in_pieces(msg, len, odd, d3);
    CHECK(memcmp(d, d2, sizeof(d)) == 0 && memcmp(d, d3, sizeof(d)) == 0);
    sha256_update(&all, d, sizeof(d));
  }
  sha256_final(&all, d);
  CHECK_STR(sha256_hex(d, hex), "cdae585c9adbb2b9023226cf2b64f36d7346e0c810b7e03d98777d658de42d93");
}

/* Lengths around the 55/56/64-byte padding boundaries, every cut point. */
static void every_split(void) {
  unsigned char msg[200], one[SHA256_DIGEST_SIZE], two[SHA256_DIGEST_SIZE];
  size_t len, cut;
  for (len = 0; len < sizeof(msg); len++) msg[len] = (unsigned char)(len * 7 + 3);
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

/* sha256_update2 gives what two sha256_update calls give: every length to
** 300 and a few longer, after equal and unequal amounts already buffered. */
static void update2(void) {
  static const size_t pre[][2] = {{0, 0}, {1, 1}, {63, 63}, {64, 64}, {3, 70}, {0, 5}};
  unsigned char msg[8192], one[SHA256_DIGEST_SIZE], two[SHA256_DIGEST_SIZE], d[SHA256_DIGEST_SIZE],
      d2[SHA256_DIGEST_SIZE];
  size_t i, len, k;
  for (i = 0; i < sizeof(msg); i++) msg[i] = pattern(i * 5 + 1);
  for (k = 0; k < sizeof(pre) / sizeof(pre[0]); k++) {
    for (len = 0; len <= 4000; len += len < 300 ? 1 : 617) {
      sha256_ctx a, b;
      const unsigned char *m2 = msg + 4001 + k; /* another message, at another alignment */
      sha256_init(&a);
      sha256_init(&b);
      sha256_update(&a, msg, pre[k][0]);
      sha256_update(&b, m2, pre[k][1]);
      sha256_update2(&a, &b, msg + pre[k][0], m2 + pre[k][1], len);
      sha256_final(&a, d);
      sha256_final(&b, d2);
      sha256(msg, pre[k][0] + len, one);
      sha256(m2, pre[k][1] + len, two);
      CHECK(memcmp(d, one, sizeof(d)) == 0 && memcmp(d2, two, sizeof(d)) == 0);
    }
  }
}

static void all_checks(void) {
  known_vectors();
  if (!unit_failed()) one_million_a();
  if (!unit_failed()) every_length();
  if (!unit_failed()) every_split();
  if (!unit_failed()) update2();
}

TEST(sha256_portable_vectors_lengths_and_splits) {
  CHECK(use_path(0));
  all_checks();
  sha256_force_portable(0);
}

TEST(sha256_ni_vectors_lengths_and_splits) {
  if (!use_path(1)) {
    sha256_force_portable(0);
    SKIP("this CPU has no SHA extensions (sha_ni), or this is not an x86-64 GCC/clang build");
  }
  all_checks();
  sha256_force_portable(0);
}

/* The two paths keep the same state: a stream may switch between them. */
TEST(sha256_paths_agree_and_interleave) {
  unsigned char msg[4096], a[SHA256_DIGEST_SIZE], b[SHA256_DIGEST_SIZE];
  size_t len, i;
  if (!use_path(1)) {
    sha256_force_portable(0);
    SKIP("this CPU has no SHA extensions (sha_ni), or this is not an x86-64 GCC/clang build");
  }
  for (i = 0; i < sizeof(msg); i++) msg[i] = pattern(i * 3);
  for (len = 0; len <= sizeof(msg); len += len < 300 ? 1 : 379) {
    sha256_ctx c;
    use_path(1);
    sha256(msg, len, a);
    use_path(0);
    sha256(msg, len, b);
    if (memcmp(a, b, sizeof(a)) != 0) break;
    sha256_init(&c);
    for (i = 0; i < len; i += 100) { /* alternate paths every 100 bytes */
      use_path((int)(i / 100) & 1);
      sha256_update(&c, msg + i, len - i < 100 ? len - i : 100);
    }
    sha256_final(&c, b);
    if (memcmp(a, b, sizeof(a)) != 0) break;
  }
  sha256_force_portable(0);
  CHECK(len > sizeof(msg));
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
