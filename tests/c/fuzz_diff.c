/* Differential libFuzzer target: the generated C library against librabbitmq 0.11 on the same octets
 * (built and run by scripts/fuzz-c as target "diff"; fuzz_diff_methods.c is written by
 * gen_interop.generate_diff from librabbitmq's header).
 *
 * Input: one selector octet (modulo 3 -- 0: a method frame payload; 1: basic properties, flag words
 * first; 2: a field table with its 4-octet length), then the payload. Whatever OUR decoder accepts, librabbitmq's decoder must accept too (it checks
 * less: no UTF-8, no trailing data, no depth limit), with one exception it cannot read: the 'U' type
 * code (signed 16-bit, ours only); and every field must then be equal in both, tables entry by entry
 * with their type codes. librabbitmq is only handed input ours validated (its own decoder is not the
 * one being fuzzed, and Debian's build is not instrumented). A difference aborts.
 */
#define TCAP 65536
#define BUFCAP 65536
#include <stdlib.h>

#include "interop_rt.h"
#undef CHECK
#define CHECK(cond, ...)                                                                          \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      fprintf(stderr, "DIFFERENCE %s:%d: %s: ", __FILE__, __LINE__, #cond);                      \
      fprintf(stderr, __VA_ARGS__);                                                              \
      fputc('\n', stderr);                                                                       \
      abort();                                                                                   \
    }                                                                                            \
  } while (0)

#include "fuzz_diff_methods.c"

static amqp_pool_t g_pool;
static int g_init;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *in;
  void *lib = NULL;
  int st, lst;
  if (size < 1) return 0;
  if (!g_init) {
    init_amqp_pool(&g_pool, 4096);
    g_init = 1;
  }
  /* an exact-size copy: ASan sees any read past the input */
  in = malloc(size - 1 ? size - 1 : 1);
  memcpy(in, data + 1, size - 1);
  size--;
  if (data[0] % 3 == 0) {
    ag_method_t m;
    st = ag_method_decode(in, size, &m);
    if (st == AG_OK) {
      lst = amqp_decode_method(m.id, &g_pool, abytes(in + 4, size - 4), &lib);
      CHECK(lst == 0 || memchr(in, 'U', size) != NULL, "librabbitmq refuses %s that ours accepts: %d",
            ag_method_name(m.id), lst);
      if (lst == 0) diff_method(&m, lib);
    }
  } else if (data[0] % 3 == 2) {
    ag_table_t t;
    amqp_table_t lt;
    size_t off = 0;
    st = ag_table_decode(in, size, &t);
    if (st == AG_OK) {
      lst = amqp_decode_table(abytes(in, size), &g_pool, &lt, &off);
      CHECK(lst == 0 || memchr(in, 'U', size) != NULL, "librabbitmq refuses a table ours accepts: %d", lst);
      if (lst == 0) {
        CHECK(off == size, "librabbitmq read %zu of the table's %zu octets", off, size);
        CHECK(cmp_table(&lt, t, "table"), "table");
      }
    }
  } else {
    ag_basic_properties_t p;
    st = ag_basic_properties_decode(in, size, &p);
    if (st == AG_OK) {
      lst = amqp_decode_properties(60, &g_pool, abytes(in, size), &lib);
      CHECK(lst == 0 || memchr(in, 'U', size) != NULL, "librabbitmq refuses properties ours accepts: %d", lst);
      if (lst == 0) diff_basic_properties(&p, lib);
    }
  }
  recycle_amqp_pool(&g_pool);
  free(in);
  return 0;
}
