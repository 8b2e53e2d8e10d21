/* Differential libFuzzer target: the generated C library against librabbitmq 0.11 on the same octets
 * (built and run by scripts/fuzz-c as target "diff"; fuzz_diff_methods.c is written by
 * gen_interop.generate_diff from librabbitmq's header).
 *
 * Input: one selector octet (modulo 4 -- 0: a method frame payload; 1: basic properties, flag words
 * first; 2: a field table with its 4-octet length; 3: a stream of frames), then the payload. For
 * frames, every frame our reader returns (frame_max 65536) whose payload our decoders accept must come
 * out of librabbitmq's amqp_handle_input (a fresh connection per input) as the same frame: type,
 * channel, method and every argument, or class, body size and every property, or the body octets. Whatever OUR decoder accepts, librabbitmq's decoder must accept too (it checks
 * less: no UTF-8, no trailing data, no depth limit), with one exception it cannot read: the 'U' type
 * code (signed 16-bit, ours only); and every field must then be equal in both, tables entry by entry
 * with their type codes (in a stream too: a method or header frame with a 'U' octet that librabbitmq refuses
 * ends the comparison). librabbitmq is only handed input ours validated (its own decoder is not the
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

static void diff_frames(const uint8_t *in, size_t size) {
  static uint8_t storage[65536];
  amqp_connection_state_t lib;
  amqp_bytes_t rest = abytes((void *)in, size);
  ag_reader_t r;
  ag_frame_t f;
  if (size == 0 || in[0] == 'A') return; /* librabbitmq reads a protocol header only as a client's first input */
  lib = amqp_new_connection();
  {
    /* out of its initial state first: there it reads 8 octets for a possible protocol header, and a
       first frame with an empty payload (a heartbeat) then loses its frame-end octet (a librabbitmq quirk
       that a real connection never meets: the handshake comes first) */
    static const uint8_t hdr[8] = {'A', 'M', 'Q', 'P', 0, 0, 9, 1};
    amqp_frame_t pf;
    int used = amqp_handle_input(lib, abytes((void *)hdr, 8), &pf);
    CHECK(used == 8 && pf.frame_type == 'A', "protocol header (librabbitmq's pseudo-frame 'A'): %d", used);
  }
  ag_reader_init(&r, storage, sizeof storage, 65536);
  ag_reader_feed(&r, in, size);
  while (ag_reader_next(&r, &f) == AG_OK) {
    amqp_frame_t lf;
    ag_method_t m;
    ag_content_header_t h;
    int used;
    if (f.type == AG_FRAME_PROTOCOL_HEADER)
      break; /* ours reports "AMQP..." anywhere in a stream for the caller to judge; librabbitmq only first */
    if (f.type == AG_FRAME_METHOD && ag_method_decode(f.payload.bytes, f.payload.len, &m) != AG_OK) break;
    if (f.type == AG_FRAME_HEADER && (ag_content_header_decode(f.payload.bytes, f.payload.len, &h) != AG_OK ||
                                      h.class_id != 60))
      break; /* librabbitmq decodes the properties of every class; ours of those with content */
    do { /* a frame split by librabbitmq's 7-octet header read comes in two calls */
      used = amqp_handle_input(lib, rest, &lf);
      if (used <= 0 && f.type != AG_FRAME_BODY && memchr(f.payload.bytes, 'U', f.payload.len) != NULL)
        goto done; /* librabbitmq cannot read the 'U' type code, as in the single-payload modes below */
      CHECK(used > 0, "amqp_handle_input %d on a frame ours accepts (type %d, %zu octets)", used, f.type,
            f.payload.len);
      rest.bytes = (uint8_t *)rest.bytes + used;
      rest.len -= (size_t)used;
    } while (lf.frame_type == 0 && rest.len > 0);
    CHECK(lf.frame_type == f.type && lf.channel == f.channel, "frame type %d/%d channel %u/%u", lf.frame_type, f.type,
          lf.channel, f.channel);
    if (f.type == AG_FRAME_METHOD) {
      CHECK(lf.payload.method.id == m.id, "method id");
      diff_method(&m, lf.payload.method.decoded);
    } else if (f.type == AG_FRAME_HEADER) {
      CHECK(lf.payload.properties.class_id == 60 && lf.payload.properties.body_size == h.body_size, "header");
      diff_basic_properties(&h.u.basic, lf.payload.properties.decoded);
    } else if (f.type == AG_FRAME_BODY) {
      CHECK(same_bytes(lf.payload.body_fragment.bytes, lf.payload.body_fragment.len, f.payload.bytes, f.payload.len),
            "body");
    }
  }
done:
  amqp_destroy_connection(lib);
}

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
  if (data[0] % 4 == 3) {
    diff_frames(in, size);
  } else if (data[0] % 4 == 0) {
    ag_method_t m;
    st = ag_method_decode(in, size, &m);
    if (st == AG_OK) {
      lst = amqp_decode_method(m.id, &g_pool, abytes(in + 4, size - 4), &lib);
      CHECK(lst == 0 || memchr(in, 'U', size) != NULL, "librabbitmq refuses %s that ours accepts: %d",
            ag_method_name(m.id), lst);
      if (lst == 0) diff_method(&m, lib);
    }
  } else if (data[0] % 4 == 2) {
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
