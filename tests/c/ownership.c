/* Ownership, keys and errors of the generated C library (issue 18, items 5-7), run by tests/amqp0/c/test_c_ownership.py.
 *
 * usage: ownership            hand-built checks; prints "N checks, 0 failed"
 *        ownership where      reads lines "method HEX" / "properties HEX" on stdin, prints per line
 *                             "STATUS WHERE-STATUS OFFSET FIELD" from the *_decode_where functions
 * Octets are written out by hand here; nothing is taken from the library under test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag.h"

static int checks, failures;
#define CHECK(cond)                                                                                                \
  do {                                                                                                             \
    checks++;                                                                                                      \
    if (!(cond)) {                                                                                                 \
      failures++;                                                                                                  \
      printf("failed line %d: %s\n", __LINE__, #cond);                                                            \
    }                                                                                                              \
  } while (0)

static int same(ag_bytes_t b, const char *s) { return b.len == strlen(s) && memcmp(b.bytes, s, b.len) == 0; }

/* basic.get-ok on channel 1: delivery-tag 7, redelivered 0, exchange, routing key "rk", message-count 0 */
static size_t get_ok(uint8_t *out, const char *exchange) {
  size_t n = 0, el = strlen(exchange);
  uint8_t payload[64];
  static const uint8_t head[] = {0, 60, 0, 71, 0, 0, 0, 0, 0, 0, 0, 7, 0};
  memcpy(payload, head, sizeof head);
  n = sizeof head;
  payload[n++] = (uint8_t)el;
  memcpy(payload + n, exchange, el);
  n += el;
  payload[n++] = 2, payload[n++] = 'r', payload[n++] = 'k';
  memset(payload + n, 0, 4), n += 4;
  out[0] = 1, out[1] = 0, out[2] = 1, out[3] = 0, out[4] = 0, out[5] = 0, out[6] = (uint8_t)n;
  memcpy(out + 7, payload, n);
  out[7 + n] = 0xce;
  return n + 8;
}

/* Item 5: a frame split across two reads is gathered in the reader's storage; the next split frame reuses it.
   What was decoded from the first points at octets that are gone; a copy does not. */
static void split_reads(void) {
  static uint8_t storage[4096], kept[256], wire[2][128];
  size_t n0 = get_ok(wire[0], "orders.exchange"), n1 = get_ok(wire[1], "XXXXXX.exchange");
  ag_reader_t r;
  ag_frame_t f;
  ag_method_t m, copy, small;
  size_t used = 0;
  ag_reader_init(&r, storage, sizeof storage, 4096);
  ag_reader_feed(&r, wire[0], 10);
  CHECK(ag_reader_next(&r, &f) == AG_INCOMPLETE);
  ag_reader_feed(&r, wire[0] + 10, n0 - 10);
  CHECK(ag_reader_next(&r, &f) == AG_OK && f.payload.bytes >= storage && f.payload.bytes < storage + sizeof storage);
  CHECK(ag_method_decode(f.payload.bytes, f.payload.len, &m) == AG_OK && m.id == AG_BASIC_GET_OK);
  CHECK(same(m.u.basic_get_ok.exchange, "orders.exchange") && same(m.u.basic_get_ok.routing_key, "rk"));
  /* too little storage: the size needed, nothing written */
  memset(&small, 0x5A, sizeof small);
  CHECK(ag_method_copy(&small, &m, kept, 16, &used) == AG_ERR_NO_SPACE && used == 17);
  CHECK(((const uint8_t *)&small)[0] == 0x5A);
  CHECK(ag_method_copy(&copy, &m, kept, sizeof kept, &used) == AG_OK && used == 17);
  CHECK(copy.u.basic_get_ok.exchange.bytes == kept && copy.u.basic_get_ok.routing_key.bytes == kept + 15);
  CHECK(copy.u.basic_get_ok.delivery_tag == 7);
  CHECK(ag_reader_next(&r, &f) == AG_INCOMPLETE);
  ag_reader_feed(&r, wire[1], 10);
  CHECK(ag_reader_next(&r, &f) == AG_INCOMPLETE);
  ag_reader_feed(&r, wire[1] + 10, n1 - 10);
  CHECK(ag_reader_next(&r, &f) == AG_OK);
  /* the first decode's exchange now reads the second frame's octets: what the client saw */
  CHECK(same(m.u.basic_get_ok.exchange, "XXXXXX.exchange"));
  CHECK(same(copy.u.basic_get_ok.exchange, "orders.exchange") && same(copy.u.basic_get_ok.routing_key, "rk"));
  /* in place (dst == src), and an empty string gets NULL */
  m.u.basic_get_ok.routing_key.len = 0;
  CHECK(ag_method_copy(&m, &m, kept + 100, 100, &used) == AG_OK && used == 15 && m.u.basic_get_ok.exchange.bytes == kept + 100);
  CHECK(m.u.basic_get_ok.routing_key.bytes == NULL);
  m.id = 0xffff0001u;
  CHECK(ag_method_copy(&copy, &m, kept, sizeof kept, &used) == AG_ERR_UNKNOWN_ID);
}

/* Item 5, properties: only the present ones are copied. */
static void properties_copy(void) {
  /* class 60, weight 0, body size 5, flags content-type + headers, "text/plain", headers {"k": S "v"} */
  static const uint8_t payload[] = {0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0xA0, 0x00, 10, 't', 'e', 'x', 't',
                                    '/', 'p', 'l', 'a', 'i', 'n', 0, 0, 0, 8, 1, 'k', 'S', 0, 0, 0, 1, 'v'};
  uint8_t input[sizeof payload], kept[64];
  ag_content_header_t h, c;
  ag_field_value_t v;
  size_t used = 0;
  memcpy(input, payload, sizeof payload);
  CHECK(ag_content_header_decode(input, sizeof input, &h) == AG_OK);
  CHECK(ag_content_header_copy(&c, &h, kept, 17, &used) == AG_ERR_NO_SPACE && used == 18);
  CHECK(ag_content_header_copy(&c, &h, kept, sizeof kept, &used) == AG_OK && used == 18);
  memset(input, 0, sizeof input); /* the input is gone */
  CHECK(same(c.u.basic.content_type, "text/plain") && c.body_size == 5);
  CHECK(ag_table_get(c.u.basic.headers, AG_LIT("k"), &v) == 1 && v.type == 'S' && same(v.v.bytes, "v"));
}

/* Item 6: keys from literals and C strings; a table entry by key. */
static void keys(void) {
  uint8_t buf[256];
  ag_table_writer_t w;
  ag_table_t t;
  ag_field_value_t v;
  const char *dynamic = "x-max-length";
  static const uint8_t want[] = {7, 'x', '-', 'i', 'n', 'd', 'e', 'x', 'I', 0, 0, 0, 3, 12, 'x', '-', 'm', 'a', 'x', '-',
                                 'l', 'e', 'n', 'g', 't', 'h', 't', 1};
  CHECK(AG_LIT("x-index").len == 7 && AG_LIT("").len == 0);
  CHECK(ag_cstring(dynamic).len == 12 && ag_cstring(NULL).len == 0 && ag_cstring(NULL).bytes != NULL);
  ag_table_writer_init(&w, buf, sizeof buf);
  ag_table_add_i32(&w, AG_LIT("x-index"), 3);
  ag_table_add_bool(&w, ag_cstring(dynamic), true);
  CHECK(ag_table_writer_finish(&w, &t) == AG_OK && t.len == sizeof want && memcmp(t.bytes, want, t.len) == 0);
  CHECK(ag_table_get(t, AG_LIT("x-index"), &v) == 1 && v.type == 'I' && v.v.i == 3);
  CHECK(ag_table_get(t, ag_cstring("x-max-length"), NULL) == 1);
  CHECK(ag_table_get(t, AG_LIT("x-inde"), &v) == 0 && ag_table_get(t, AG_LIT("x-indexx"), &v) == 0);
  /* a duplicated key: the first entry */
  static const uint8_t dup[] = {1, 'a', 't', 1, 1, 'a', 't', 0};
  CHECK(ag_table_get((ag_table_t){dup, sizeof dup}, AG_LIT("a"), &v) == 1 && v.v.boolean);
  /* a malformed table: an error, not a miss */
  static const uint8_t bad[] = {1, 'a', 'Z'};
  CHECK(ag_table_get((ag_table_t){bad, sizeof bad}, AG_LIT("b"), &v) == AG_ERR_TABLE);
}

/* Item 7: every status named and explained, each once. */
static void statuses(void) {
  for (int s = -17; s <= 1; s++) {
    const char *name = ag_status_name(s), *text = ag_strerror(s);
    CHECK(strcmp(name, "unknown") != 0 && text != NULL && strlen(text) > 5);
    for (int t = -17; t < s; t++)
      CHECK(strcmp(ag_status_name(t), name) != 0 && strcmp(ag_strerror(t), text) != 0);
  }
  CHECK(strcmp(ag_status_name(AG_ERR_STORAGE), "storage") == 0 && strcmp(ag_status_name(-18), "unknown") == 0);
  CHECK(strcmp(ag_strerror(-18), "Not a status of this library") == 0);
}

/* Item 7: where a decode failed, on octets written out by hand. */
static void where(void) {
  ag_method_t m;
  ag_content_header_t h;
  ag_decode_error_t w;
  /* basic.publish: ticket, exchange "ex", routing key 0xc3 0x28 (not UTF-8), flags */
  static const uint8_t pub[] = {0, 60, 0, 40, 0, 0, 2, 'e', 'x', 2, 0xc3, 0x28, 0};
  CHECK(ag_method_decode_where(pub, sizeof pub, &m, &w) == AG_ERR_INVALID_UTF8);
  CHECK(w.status == AG_ERR_INVALID_UTF8 && w.offset == 9 && strcmp(w.field, "routing-key") == 0);
  CHECK(ag_method_decode_where(pub, 8, &m, &w) == AG_ERR_TRUNCATED && w.offset == 6 && strcmp(w.field, "exchange") == 0);
  CHECK(ag_method_decode_where(pub, 12, &m, &w) == AG_ERR_INVALID_UTF8); /* the bad string is met before the cut */
  uint8_t more[sizeof pub + 1];
  memcpy(more, pub, sizeof pub);
  more[10] = 'r', more[11] = 'k', more[sizeof pub] = 9;
  CHECK(ag_method_decode_where(more, sizeof more, &m, &w) == AG_ERR_TRAILING_DATA && w.offset == 13 && w.field == NULL);
  CHECK(ag_method_decode_where(more, 12, &m, &w) == AG_ERR_TRUNCATED && w.offset == 12 && strcmp(w.field, "mandatory") == 0);
  static const uint8_t unknown_method[] = {0, 60, 0, 99}, unknown_class[] = {0x7f, 0, 0, 1};
  CHECK(ag_method_decode_where(unknown_method, 4, &m, &w) == AG_ERR_UNKNOWN_METHOD && w.offset == 2 &&
        strcmp(w.field, "method-id") == 0);
  CHECK(ag_method_decode_where(unknown_class, 4, &m, &w) == AG_ERR_UNKNOWN_CLASS && w.offset == 0 &&
        strcmp(w.field, "class-id") == 0);
  CHECK(ag_method_decode_where(pub, 3, &m, &w) == AG_ERR_TRUNCATED && w.offset == 2 && strcmp(w.field, "method-id") == 0);
  /* queue.declare: ticket, queue "q", 5 bits in one octet, arguments {"a": type 'Z'} */
  static const uint8_t declare[] = {0, 50, 0, 10, 0, 0, 1, 'q', 0, 0, 0, 0, 3, 1, 'a', 'Z'};
  CHECK(ag_method_decode_where(declare, sizeof declare, &m, &w) == AG_ERR_TABLE && w.offset == 9 &&
        strcmp(w.field, "arguments") == 0 && w.status == AG_ERR_TABLE);
  /* content headers: cut in the weight; an unknown flag (bit 0 of basic's 14 is the continuation; bit 1 is unused);
     content-type not UTF-8; a headers table with a bad type code */
  static const uint8_t cut[] = {0, 60, 0};
  CHECK(ag_content_header_decode_where(cut, sizeof cut, &h, &w) == AG_ERR_TRUNCATED && w.offset == 2 &&
        strcmp(w.field, "weight") == 0);
  static const uint8_t flags[] = {0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x02};
  CHECK(ag_content_header_decode_where(flags, sizeof flags, &h, &w) == AG_ERR_PROPERTY_FLAGS && w.offset == 12 &&
        strcmp(w.field, "flags") == 0);
  static const uint8_t ctype[] = {0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x00, 1, 0xff};
  CHECK(ag_content_header_decode_where(ctype, sizeof ctype, &h, &w) == AG_ERR_INVALID_UTF8 && w.offset == 14 &&
        strcmp(w.field, "content-type") == 0);
  static const uint8_t headers[] = {0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0x00, 0, 0, 0, 3, 1, 'a', 'Z'};
  CHECK(ag_content_header_decode_where(headers, sizeof headers, &h, &w) == AG_ERR_TABLE && w.offset == 14 &&
        strcmp(w.field, "headers") == 0);
  CHECK(ag_content_header_decode_where(headers, sizeof headers, &h, NULL) == AG_ERR_TABLE);
}

static int hexval(int c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

static int where_lines(void) {
  static char line[1 << 16];
  static uint8_t buf[1 << 15];
  while (fgets(line, sizeof line, stdin)) {
    char *hex = strchr(line, ' ');
    size_t n = 0;
    if (hex == NULL)
      return 2;
    for (hex++; hexval(hex[0]) >= 0 && hexval(hex[1]) >= 0 && n < sizeof buf; hex += 2)
      buf[n++] = (uint8_t)(hexval(hex[0]) << 4 | hexval(hex[1]));
    uint8_t *in = malloc(n ? n : 1); /* exact size: ASan sees a read past the input */
    ag_decode_error_t w = {0, NULL, 0};
    int rc;
    memcpy(in, buf, n);
    if (strncmp(line, "method", 6) == 0) {
      ag_method_t m;
      rc = ag_method_decode_where(in, n, &m, &w);
    } else {
      ag_content_header_t h;
      rc = ag_content_header_decode_where(in, n, &h, &w);
    }
    printf("%s %s %u %s\n", ag_status_name(rc), rc ? ag_status_name(w.status) : "-", (unsigned)w.offset,
           w.field ? w.field : "-");
    free(in);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "where") == 0)
    return where_lines();
  split_reads();
  properties_copy();
  keys();
  statuses();
  where();
  printf("%d checks, %d failed\n", checks, failures);
  return failures != 0;
}
