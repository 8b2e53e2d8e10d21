/* Classifies byte streams for tests/amqp0/engine/test_differential.py: one hex line per input on stdin, one line per
 * input on stdout, the same format the Python and Java classifiers print:
 *   "ok N LEFT"   the stream gave N frames, each method and content header decoded, LEFT octets held back
 *   "KIND N"      the first error's kind (the corpus's names), after N good frames
 * The reader runs with frame_max 4096 and storage for the whole input, so its storage bound never decides.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag.h"

#define FRAME_MAX 4096u

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

static void classify(const uint8_t *in, size_t n) {
  size_t cap = (n > FRAME_MAX ? n : FRAME_MAX) + 16;
  uint8_t *storage = malloc(cap);
  ag_reader_t r;
  ag_frame_t f;
  unsigned got = 0;
  int rc;
  if (storage == NULL) abort();
  ag_reader_init(&r, storage, cap, FRAME_MAX);
  ag_reader_feed(&r, in, n);
  while ((rc = ag_reader_next(&r, &f)) == AG_OK) {
    if (f.type == AG_FRAME_METHOD) {
      ag_method_t m;
      rc = ag_method_decode(f.payload.bytes, f.payload.len, &m);
    } else if (f.type == AG_FRAME_HEADER) {
      ag_content_header_t h;
      rc = ag_content_header_decode(f.payload.bytes, f.payload.len, &h);
    }
    if (rc != AG_OK) break;
    got++;
  }
  if (rc == AG_INCOMPLETE)
    printf("ok %u %u\n", got, (unsigned)ag_reader_buffered(&r));
  else
    printf("%s %u\n", ag_status_name(rc), got);
  free(storage);
}

int main(void) {
  static char line[1 << 21];
  static uint8_t buf[1 << 20];
  while (fgets(line, sizeof line, stdin)) {
    size_t len = strcspn(line, "\r\n"), n = 0;
    for (size_t i = 0; i + 1 < len && n < sizeof buf; i += 2) {
      int hi = hexval(line[i]), lo = hexval(line[i + 1]);
      if (hi < 0 || lo < 0) {
        fprintf(stderr, "bad hex line\n");
        return 2;
      }
      buf[n++] = (uint8_t)(hi << 4 | lo);
    }
    /* an exact-size heap copy: ASan sees any read past the input */
    uint8_t *in = malloc(n ? n : 1);
    if (in == NULL) abort();
    memcpy(in, buf, n);
    classify(in, n);
    free(in);
  }
  return 0;
}
