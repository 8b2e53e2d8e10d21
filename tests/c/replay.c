/* Replays inputs through one decoder of the generated library and prints each input's status name
 * (run by tests/amqp0/c/test_c_fuzz_regressions.py, built with ASan and UBSan).
 *
 * usage: replay TARGET FILE...   TARGET: frame (one frame, frame_max 4096), method (a method frame's
 *        payload), header (a header frame's payload), table (a table with its 4-octet length),
 *        basic_properties (flag words + properties)
 * Prints "FILE STATUS" per input; a decoded table is iterated to its end (which must not fail).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag.h"

static uint8_t buf[1 << 20];

static int walk(ag_table_t t, int depth);
static int walk_value(const ag_field_value_t *v, int depth) {
  if (depth > AG_MAX_TABLE_DEPTH) return -1;
  if (v->type == 'F') return walk(v->v.table, depth + 1);
  if (v->type == 'A') {
    ag_table_iter_t it;
    ag_field_value_t item;
    int rc;
    ag_array_iter_init(&it, v->v.array);
    while ((rc = ag_array_next(&it, &item)) == 1)
      if (walk_value(&item, depth + 1) != 0) return -1;
    return rc;
  }
  return 0;
}
static int walk(ag_table_t t, int depth) {
  ag_table_iter_t it;
  ag_bytes_t k;
  ag_field_value_t v;
  int rc;
  ag_table_iter_init(&it, t);
  while ((rc = ag_table_next(&it, &k, &v)) == 1)
    if (walk_value(&v, depth) != 0) return -1;
  return rc;
}

int main(int argc, char **argv) {
  int i;
  if (argc < 3) {
    fprintf(stderr, "usage: %s TARGET FILE...\n", argv[0]);
    return 2;
  }
  for (i = 2; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    size_t n;
    int st;
    uint8_t *in;
    if (!f) {
      perror(argv[i]);
      return 2;
    }
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    /* an exact-size heap copy: ASan sees any read past the input */
    in = malloc(n ? n : 1);
    memcpy(in, buf, n);
    if (strcmp(argv[1], "frame") == 0) {
      ag_frame_t fr;
      size_t used = 0;
      st = ag_frame_parse(in, n, 4096, &fr, &used);
    } else if (strcmp(argv[1], "method") == 0) {
      ag_method_t m;
      st = ag_method_decode(in, n, &m);
    } else if (strcmp(argv[1], "header") == 0) {
      ag_content_header_t h;
      st = ag_content_header_decode(in, n, &h);
      if (st == AG_OK && h.class_id == 60 && (h.u.basic.flags & AG_BASIC_HEADERS_FLAG) && walk(h.u.basic.headers, 1))
        st = 99;
    } else if (strcmp(argv[1], "table") == 0) {
      ag_table_t t;
      st = ag_table_decode(in, n, &t);
      if (st == AG_OK && walk(t, 1) != 0) st = 99;
    } else if (strcmp(argv[1], "basic_properties") == 0) {
      ag_basic_properties_t p;
      st = ag_basic_properties_decode(in, n, &p);
      if (st == AG_OK && (p.flags & AG_BASIC_HEADERS_FLAG) && walk(p.headers, 1) != 0) st = 99;
    } else {
      fprintf(stderr, "unknown target %s\n", argv[1]);
      return 2;
    }
    printf("%s %s\n", strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i],
           st == 99 ? "ITERATION-FAILED" : ag_status_name(st));
    free(in);
  }
  return 0;
}
