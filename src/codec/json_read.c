/* SPDX-License-Identifier: Apache-2.0 */
/*
** json_read.c — strict, bounded JSON pull reader (see json_read.h).
*/
#include "codec/json_read.h"

#include <stdio.h>
#include <string.h>

/* Whatever was expected, text that stops early says so: "unexpected end of
** JSON" reads better for a truncated header than "expected ',' or '}'". */
int json_fail(json_reader *r, const char *problem) {
  return json_fail_at(r, r->pos, r->pos >= r->n ? "unexpected end of JSON" : problem);
}

int json_fail_at(json_reader *r, uint64_t pos, const char *problem) {
  return codec_fail(r->err, CODEC_CORRUPT, "%s: %s at byte %llu", r->what, problem,
                    (unsigned long long)(r->base + pos));
}

int json_fail_str(json_reader *r, const json_str *s, const char *problem) {
  return json_fail_at(r, (uint64_t)(s->p - r->s) - 1, problem);
}

int json_reader_init(json_reader *r, const void *text, uint64_t n, uint64_t base, const char *what, codec_err *err) {
  r->s = text;
  r->n = n;
  r->pos = 0;
  r->base = base;
  r->depth = 0;
  r->what = what;
  r->err = err;
  if (!codec_utf8_valid(r->s, n)) return codec_fail(err, CODEC_CORRUPT, "%s is not valid UTF-8", what);
  return CODEC_OK;
}

static void skip_space(json_reader *r) {
  while (r->pos < r->n) {
    unsigned char c = r->s[r->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    r->pos++;
  }
}

int json_peek(json_reader *r) {
  skip_space(r);
  return r->pos < r->n ? r->s[r->pos] : 0;
}

int json_begin(json_reader *r, char open) {
  if (json_peek(r) != open) return json_fail(r, open == '{' ? "expected an object" : "expected an array");
  if (r->depth >= JSON_MAX_DEPTH) return json_fail(r, "JSON nested too deeply");
  r->pos++;
  r->first[r->depth++] = 1;
  return CODEC_OK;
}

/* Shared by json_next and json_next_key: the separator or the close. */
static int next_member(json_reader *r, char close, int *more) {
  int c = json_peek(r);
  if (r->depth == 0) return json_fail(r, "no open container");
  if (c == close) {
    r->pos++;
    r->depth--;
    *more = 0;
    return CODEC_OK;
  }
  if (!r->first[r->depth - 1]) {
    if (c != ',') return json_fail(r, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
    r->pos++;
    skip_space(r);
  }
  r->first[r->depth - 1] = 0;
  *more = 1;
  return CODEC_OK;
}

int json_next(json_reader *r, int *more) { return next_member(r, ']', more); }

int json_next_key(json_reader *r, int *more, json_str *key) {
  int rc = next_member(r, '}', more);
  if (rc || !*more) return rc;
  if (json_peek(r) != '"') return json_fail(r, "expected a string key");
  if ((rc = json_string(r, key)) != CODEC_OK) return rc;
  if (json_peek(r) != ':') return json_fail(r, "expected ':'");
  r->pos++;
  return CODEC_OK;
}

static int hex4(const unsigned char *p, uint32_t *out) {
  uint32_t v = 0;
  int i;
  for (i = 0; i < 4; i++) {
    unsigned char c = p[i];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= (uint32_t)(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= (uint32_t)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v |= (uint32_t)(c - 'A' + 10);
    else
      return -1;
  }
  *out = v;
  return 0;
}

int json_string(json_reader *r, json_str *out) {
  uint64_t start;
  if (json_peek(r) != '"') return json_fail(r, "expected a string");
  start = ++r->pos;
  out->escaped = 0;
  while (r->pos < r->n) {
    unsigned char c = r->s[r->pos];
    if (c == '"') {
      out->p = r->s + start;
      out->n = r->pos - start;
      r->pos++;
      return CODEC_OK;
    }
    if (c < 0x20) return json_fail(r, "control character in a string");
    if (c != '\\') {
      r->pos++;
      continue;
    }
    out->escaped = 1;
    if (r->pos + 1 >= r->n) break;
    c = r->s[r->pos + 1];
    if (c == 'u') {
      uint32_t cp, lo;
      if (r->n - r->pos < 6 || hex4(r->s + r->pos + 2, &cp)) return json_fail(r, "bad \\u escape");
      if (cp >= 0xdc00 && cp <= 0xdfff) return json_fail(r, "unpaired surrogate escape");
      if (cp >= 0xd800 && cp <= 0xdbff) {
        if (r->n - r->pos < 12 || r->s[r->pos + 6] != '\\' || r->s[r->pos + 7] != 'u' || hex4(r->s + r->pos + 8, &lo) ||
            lo < 0xdc00 || lo > 0xdfff)
          return json_fail(r, "unpaired surrogate escape");
        r->pos += 6;
      }
      r->pos += 6;
      continue;
    }
    if (!strchr("\"\\/bfnrt", c) || c == 0) return json_fail(r, "bad escape in a string");
    r->pos += 2;
  }
  r->pos = r->n;
  return json_fail_at(r, r->pos, "unterminated string");
}

/* Scan a number token; sets *integral when it has no fraction or exponent. */
static int scan_number(json_reader *r, int *integral, int *negative) {
  const unsigned char *s = r->s;
  uint64_t p = r->pos;
  *integral = 1;
  *negative = 0;
  if (p < r->n && s[p] == '-') {
    *negative = 1;
    p++;
  }
  if (p >= r->n || s[p] < '0' || s[p] > '9') return json_fail(r, "expected a value");
  if (s[p] == '0' && p + 1 < r->n && s[p + 1] >= '0' && s[p + 1] <= '9')
    return json_fail(r, "number with a leading zero");
  while (p < r->n && s[p] >= '0' && s[p] <= '9') p++;
  if (p < r->n && s[p] == '.') {
    *integral = 0;
    p++;
    if (p >= r->n || s[p] < '0' || s[p] > '9') return json_fail(r, "expected a digit after '.'");
    while (p < r->n && s[p] >= '0' && s[p] <= '9') p++;
  }
  if (p < r->n && (s[p] == 'e' || s[p] == 'E')) {
    *integral = 0;
    p++;
    if (p < r->n && (s[p] == '+' || s[p] == '-')) p++;
    if (p >= r->n || s[p] < '0' || s[p] > '9') return json_fail(r, "expected a digit in the exponent");
    while (p < r->n && s[p] >= '0' && s[p] <= '9') p++;
  }
  r->pos = p;
  return CODEC_OK;
}

int json_uint(json_reader *r, uint64_t *out) {
  uint64_t start, v = 0, p;
  int integral, negative, rc, c = json_peek(r);
  if (c != '-' && (c < '0' || c > '9')) return json_fail(r, "expected a non-negative integer");
  start = r->pos;
  if ((rc = scan_number(r, &integral, &negative)) != CODEC_OK) return rc;
  if (!integral || negative) {
    r->pos = start;
    return json_fail(r, "expected a non-negative integer");
  }
  for (p = start; p < r->pos; p++) {
    unsigned d = (unsigned)(r->s[p] - '0');
    if (v > (UINT64_MAX - d) / 10) {
      r->pos = start;
      return json_fail(r, "integer too large");
    }
    v = v * 10 + d;
  }
  *out = v;
  return CODEC_OK;
}

static int literal(json_reader *r, const char *word) {
  size_t len = strlen(word);
  if (r->n - r->pos < len || memcmp(r->s + r->pos, word, len) != 0) return json_fail(r, "expected a value");
  r->pos += len;
  return CODEC_OK;
}

int json_skip(json_reader *r) {
  int c = json_peek(r), more, rc, integral, negative;
  json_str s;
  switch (c) {
    case '{':
    case '[':
      if ((rc = json_begin(r, (char)c)) != CODEC_OK) return rc;
      for (;;) {
        rc = c == '{' ? json_next_key(r, &more, &s) : json_next(r, &more);
        if (rc || !more) return rc;
        if ((rc = json_skip(r)) != CODEC_OK) return rc;
      }
    case '"': return json_string(r, &s);
    case 't': return literal(r, "true");
    case 'f': return literal(r, "false");
    case 'n': return literal(r, "null");
    case 0: return json_fail(r, r->pos < r->n ? "expected a value" : "unexpected end of JSON");
    default: return scan_number(r, &integral, &negative);
  }
}

int json_end(json_reader *r) {
  json_peek(r);
  /* Not json_peek(r) != 0: that is also what a NUL byte gives. */
  if (r->pos < r->n) return json_fail(r, "unexpected text after the JSON value");
  return CODEC_OK;
}

/* Next code point of a validated string; raw UTF-8 bytes are returned one by
** one (cp < 0x100 with *raw set) so they can be copied as they are. */
static uint32_t next_unit(const json_str *s, uint64_t *i, int *raw) {
  const unsigned char *p = s->p;
  uint32_t cp, lo;
  *raw = 0;
  if (p[*i] != '\\') {
    *raw = 1;
    return p[(*i)++];
  }
  switch (p[*i + 1]) {
    case 'b': *i += 2; return '\b';
    case 'f': *i += 2; return '\f';
    case 'n': *i += 2; return '\n';
    case 'r': *i += 2; return '\r';
    case 't': *i += 2; return '\t';
    case 'u':
      hex4(p + *i + 2, &cp);
      *i += 6;
      if (cp >= 0xd800 && cp <= 0xdbff) {
        hex4(p + *i + 2, &lo);
        *i += 6;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
      }
      return cp;
    default: { /* \" \\ \/ */
      unsigned char c = p[*i + 1];
      *i += 2;
      return c;
    }
  }
}

static size_t utf8_encode(uint32_t cp, unsigned char *out) {
  if (cp < 0x80) {
    out[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (unsigned char)(0xc0 | cp >> 6);
    out[1] = (unsigned char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (unsigned char)(0xe0 | cp >> 12);
    out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    out[2] = (unsigned char)(0x80 | (cp & 0x3f));
    return 3;
  }
  out[0] = (unsigned char)(0xf0 | cp >> 18);
  out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
  out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
  out[3] = (unsigned char)(0x80 | (cp & 0x3f));
  return 4;
}

int json_unescape(const json_str *s, buf_t *out) {
  uint64_t i = 0;
  if (!s->escaped) {
    buf_append(out, s->p, s->n);
    return out->rc;
  }
  while (i < s->n && !out->rc) {
    unsigned char tmp[4];
    int raw;
    uint32_t cp = next_unit(s, &i, &raw);
    if (raw)
      buf_putc(out, (char)cp);
    else
      buf_append(out, tmp, utf8_encode(cp, tmp));
  }
  return out->rc;
}

int json_str_eq(const json_str *s, const char *lit) {
  size_t len = strlen(lit), o = 0;
  uint64_t i = 0;
  if (!s->escaped) return s->n == len && memcmp(s->p, lit, len) == 0;
  while (i < s->n) {
    unsigned char tmp[4];
    int raw;
    uint32_t cp = next_unit(s, &i, &raw);
    size_t k = raw ? 1 : utf8_encode(cp, tmp);
    if (raw) tmp[0] = (unsigned char)cp;
    if (len - o < k || memcmp(lit + o, tmp, k) != 0) return 0;
    o += k;
  }
  return o == len;
}

int json_number(json_reader *r, int *integral, int *negative) {
  int c = json_peek(r);
  if (c != '-' && (c < '0' || c > '9')) return json_fail(r, "expected a number");
  return scan_number(r, integral, negative);
}
