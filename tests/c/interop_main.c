/* librabbitmq 0.11 against the generated C library, both ways (run by tests/test_c_interop.py).
 *
 * usage: interop SEED ROUNDS [mutate]
 * Per round: every method librabbitmq implements (interop_methods.c, written by gen_interop.py),
 * the basic properties, and random field tables through librabbitmq's own table codec
 * (amqp_encode_table / amqp_decode_table). Prints counts and "N checks, M failed"; exit 1 on failure.
 */
#define TCAP 65536
#define BUFCAP (8 * 65536)
#include "interop_rt.h"

#include "interop_methods.c"

/* Tables alone: librabbitmq's encoder (with its 4-octet length) against our writer (entries only);
   each side's octets decoded by the other, deeper nesting than the method fields get. */
static void check_tables(rng_t *r, int round) {
  static uint8_t obuf[TCAP], lbuf[TCAP + 4], pbuf[TCAP + 4];
  amqp_pool_t pool;
  amqp_table_t a, ld;
  ag_table_t o;
  size_t off = 0;
  int st;
  init_amqp_pool(&pool, 4096);
  fill_table(r, round, &pool, &a, &o, obuf, sizeof obuf);
  st = amqp_encode_table(abytes(lbuf, sizeof lbuf), &a, &off);
  CHECK(st == 0, "amqp_encode_table %d", st);
  if (st == 0) {
    ag_table_t lt;
    CHECK(off == o.len + 4 && same_bytes(lbuf + 4, off - 4, o.bytes, o.len), "table octets differ");
    lt.bytes = lbuf + 4;
    lt.len = off - 4;
    st = ag_table_validate(lt);
    CHECK(st == AG_OK, "validate librabbitmq's table: %s", ag_status_name(st));
    if (st == AG_OK) CHECK(cmp_table(&a, lt, "table from librabbitmq"), "table from librabbitmq");
  }
  /* ours with its length in front, decoded by librabbitmq */
  pbuf[0] = (uint8_t)(o.len >> 24);
  pbuf[1] = (uint8_t)(o.len >> 16);
  pbuf[2] = (uint8_t)(o.len >> 8);
  pbuf[3] = (uint8_t)o.len;
  memcpy(pbuf + 4, o.bytes, o.len);
  off = 0;
  st = amqp_decode_table(abytes(pbuf, o.len + 4), &pool, &ld, &off);
  CHECK(st == 0 && off == o.len + 4, "amqp_decode_table of ours: %d", st);
  if (st == 0) CHECK(cmp_table(&ld, o, "our table in librabbitmq"), "our table in librabbitmq");
  empty_amqp_pool(&pool);
}

int main(int argc, char **argv) {
  rng_t r;
  int rounds, round;
  if (argc != 3 && !(argc == 4 && strcmp(argv[3], "mutate") == 0)) {
    fprintf(stderr, "usage: %s SEED ROUNDS [mutate]\n", argv[0]);
    return 2;
  }
  g_mutate = argc == 4;
  r.s = strtoull(argv[1], NULL, 10) | 1;
  rounds = atoi(argv[2]);
  for (round = 0; round < rounds; round++) {
    check_all_methods(&r, round);
    check_basic_properties(&r, round);
    check_tables(&r, round);
  }
  printf("librabbitmq %s\n", amqp_version());
  printf("methods: %d methods x %d rounds\n", n_methods, rounds);
  printf("properties: basic, %d properties x %d rounds\n", n_properties, rounds);
  printf("%lu checks, %lu failed\n", g_checks, g_failed);
  return g_failed ? 1 : 0;
}
