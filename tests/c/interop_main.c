/* librabbitmq 0.11 against the generated C library, both ways (run by tests/amqp0/c/test_c_interop.py).
 *
 * usage: interop SEED ROUNDS [mutate]
 * Per round: every method librabbitmq implements (interop_methods.c, written by gen_interop.py),
 * the basic properties, random field tables through librabbitmq's own table codec
 * (amqp_encode_table / amqp_decode_table), and whole messages as frames both ways: librabbitmq's
 * amqp_basic_publish writing to a socket our frame reader reads, and our ag_message_encode read by
 * librabbitmq's amqp_handle_input (bodies split at frame_max on both sides). Prints counts and "N checks, M failed"; exit 1 on failure.
 */
#define _DEFAULT_SOURCE /* socketpair, MSG_DONTWAIT */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>
#define TCAP 65536
#define BUFCAP (8 * 65536)
#include "interop_rt.h"
#include <amqp_tcp_socket.h>

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

/* -- whole messages as frames ---------------------------------------------------------------- */
static amqp_connection_state_t g_writer, g_reader; /* librabbitmq writing (socket) and reading */
static int g_fds[2];
static uint8_t g_body[3 * 65536], g_wire[4 * 65536 + 4096];
static unsigned long g_frames_lib_to_ours, g_frames_ours_to_lib;

static void message_values(rng_t *r, int round, amqp_pool_t *pool, amqp_basic_properties_t *a,
                           ag_basic_properties_t *o, uint8_t *tbuf, size_t *body_len) {
  size_t i;
  memset(a, 0, sizeof *a);
  memset(o, 0, sizeof *o);
  a->_flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
              AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG;
  o->flags = AG_BASIC_CONTENT_TYPE_FLAG | AG_BASIC_HEADERS_FLAG | AG_BASIC_DELIVERY_MODE_FLAG |
             AG_BASIC_MESSAGE_ID_FLAG | AG_BASIC_TIMESTAMP_FLAG;
  fill_shortstr(r, round, pool, &a->content_type, &o->content_type);
  fill_table(r, round, pool, &a->headers, &o->headers, tbuf, TCAP);
  a->delivery_mode = o->delivery_mode = (uint8_t)(1 + round % 2);
  fill_shortstr(r, round, pool, &a->message_id, &o->message_id);
  a->timestamp = o->timestamp = rnd(r);
  /* empty, small, exactly one frame's worth, and larger than two frames */
  switch (round % 4) {
    case 0: *body_len = 0; break;
    case 1: *body_len = 1 + rnd_below(r, 1000); break;
    case 2: *body_len = 65536 - 8; break;
    default: *body_len = 2 * 65536 + rnd_below(r, 65536); break;
  }
  for (i = 0; i < *body_len; i++) g_body[i] = (uint8_t)rnd(r);
}

/* librabbitmq writes a message (amqp_basic_publish, frame_max 65536) into a socket; our reader,
   fed in the chunks recv() returns, must give the same method, properties and body. */
static void check_frames_lib_to_ours(rng_t *r, int round) {
  static uint8_t tbuf[TCAP], storage[65536], chunk[7001];
  amqp_pool_t pool;
  amqp_basic_properties_t a;
  ag_basic_properties_t o;
  ag_reader_t rd;
  ag_frame_t f;
  size_t body_len, got_body = 0, lp_len;
  int st, methods = 0, headers = 0;
  uint8_t lprops[TCAP + 1024];
  init_amqp_pool(&pool, 4096);
  message_values(r, round, &pool, &a, &o, tbuf, &body_len);
  st = amqp_basic_publish(g_writer, 7, amqp_cstring_bytes("ex.frames"), amqp_cstring_bytes("rk.frames"), 1, 0, &a,
                          abytes(g_body, body_len));
  CHECK(st == 0, "amqp_basic_publish %d (%s)", st, amqp_error_string2(st));
  {
    int n = amqp_encode_properties(60, &a, abytes(lprops, sizeof lprops));
    CHECK(n > 0, "amqp_encode_properties");
    lp_len = n > 0 ? (size_t)n : 0;
  }
  ag_reader_init(&rd, storage, sizeof storage, 65536);
  for (;;) {
    /* odd-sized reads: frames arrive split across chunks */
    ssize_t k = recv(g_fds[1], chunk, sizeof chunk, MSG_DONTWAIT);
    if (k <= 0) break;
    ag_reader_feed(&rd, chunk, (size_t)k);
    while ((st = ag_reader_next(&rd, &f)) == AG_OK) {
      g_frames_lib_to_ours++;
      CHECK(f.channel == 7, "channel %u", f.channel);
      if (f.type == AG_FRAME_METHOD) {
        ag_method_t m;
        methods++;
        st = ag_method_decode(f.payload.bytes, f.payload.len, &m);
        CHECK(st == AG_OK && m.id == AG_BASIC_PUBLISH, "publish frame: %s", ag_status_name(st));
        if (st == AG_OK && m.id == AG_BASIC_PUBLISH)
          CHECK(same_bytes(m.u.basic_publish.exchange.bytes, m.u.basic_publish.exchange.len, "ex.frames", 9) &&
                    same_bytes(m.u.basic_publish.routing_key.bytes, m.u.basic_publish.routing_key.len, "rk.frames", 9) &&
                    m.u.basic_publish.mandatory && !m.u.basic_publish.immediate,
                "publish arguments");
      } else if (f.type == AG_FRAME_HEADER) {
        ag_content_header_t h;
        headers++;
        st = ag_content_header_decode(f.payload.bytes, f.payload.len, &h);
        CHECK(st == AG_OK && h.class_id == 60 && h.body_size == body_len && h.u.basic.flags == o.flags,
              "header frame: %s", ag_status_name(st));
        CHECK(f.payload.len == 12 + lp_len && same_bytes(f.payload.bytes + 12, lp_len, lprops, lp_len),
              "header properties octets");
        if (st == AG_OK) {
          CHECK(cmp_table(&a.headers, h.u.basic.headers, "frames: headers"), "frames: headers table");
          CHECK(same_bytes(h.u.basic.message_id.bytes, h.u.basic.message_id.len, a.message_id.bytes,
                           a.message_id.len) && h.u.basic.timestamp == a.timestamp,
                "frames: properties");
        }
      } else if (f.type == AG_FRAME_BODY) {
        CHECK(f.payload.len + 8 <= 65536 && got_body + f.payload.len <= body_len, "body frame size");
        if (got_body + f.payload.len <= body_len)
          CHECK(same_bytes(f.payload.bytes, f.payload.len, g_body + got_body, f.payload.len), "body octets");
        got_body += f.payload.len;
      } else {
        CHECK(0, "frame type %d", f.type);
      }
    }
    CHECK(st == AG_INCOMPLETE, "reader: %s", ag_status_name(st));
  }
  CHECK(methods == 1 && headers == 1 && got_body == body_len, "frames: %d methods, %d headers, %zu of %zu body octets",
        methods, headers, got_body, body_len);
  empty_amqp_pool(&pool);
}

/* Our ag_message_encode (frame_max 4096: many body frames), then a heartbeat, read by librabbitmq's
   amqp_handle_input: the same method, properties, body. */
static void check_frames_ours_to_lib(rng_t *r, int round) {
  static uint8_t tbuf[TCAP];
  amqp_pool_t pool;
  amqp_basic_properties_t a;
  ag_method_t m;
  ag_content_header_t h;
  amqp_frame_t f;
  size_t body_len, len = 0, off = 0, got_body = 0, hb = 0;
  int st, methods = 0, headers = 0, heartbeats = 0;
  init_amqp_pool(&pool, 4096);
  memset(&h, 0, sizeof h);
  message_values(r, round, &pool, &a, &h.u.basic, tbuf, &body_len);
  memset(&m, 0, sizeof m);
  m.id = AG_BASIC_DELIVER;
  m.u.basic_deliver.consumer_tag.bytes = (const uint8_t *)"ctag";
  m.u.basic_deliver.consumer_tag.len = 4;
  m.u.basic_deliver.delivery_tag = rnd(r);
  m.u.basic_deliver.redelivered = true;
  m.u.basic_deliver.exchange.bytes = (const uint8_t *)"ex";
  m.u.basic_deliver.exchange.len = 2;
  m.u.basic_deliver.routing_key.bytes = (const uint8_t *)"rk";
  m.u.basic_deliver.routing_key.len = 2;
  h.class_id = 60;
  st = ag_message_encode(3, &m, &h, g_body, body_len, 4096, g_wire, sizeof g_wire, &len);
  CHECK(st == AG_OK, "ag_message_encode %s", ag_status_name(st));
  if (st != AG_OK) return;
  st = ag_frame_encode(AG_FRAME_HEARTBEAT, 0, NULL, 0, g_wire + len, sizeof g_wire - len, &hb);
  CHECK(st == AG_OK && hb == 8, "heartbeat frame");
  len += hb;
  while (off < len) {
    int used = amqp_handle_input(g_reader, abytes(g_wire + off, len - off), &f);
    CHECK(used > 0, "amqp_handle_input %d", used);
    if (used <= 0) break;
    off += (size_t)used;
    if (f.frame_type == 0) continue;
    g_frames_ours_to_lib++;
    if (f.frame_type == AMQP_FRAME_HEARTBEAT) {
      heartbeats++;
      continue;
    }
    CHECK(f.channel == 3, "channel %u", f.channel);
    if (f.frame_type == AMQP_FRAME_METHOD) {
      const amqp_basic_deliver_t *d = f.payload.method.decoded;
      methods++;
      CHECK(f.payload.method.id == AMQP_BASIC_DELIVER_METHOD && d->delivery_tag == m.u.basic_deliver.delivery_tag &&
                d->redelivered && same_bytes(d->consumer_tag.bytes, d->consumer_tag.len, "ctag", 4) &&
                same_bytes(d->exchange.bytes, d->exchange.len, "ex", 2) &&
                same_bytes(d->routing_key.bytes, d->routing_key.len, "rk", 2),
            "deliver decoded by librabbitmq");
    } else if (f.frame_type == AMQP_FRAME_HEADER) {
      const amqp_basic_properties_t *p = f.payload.properties.decoded;
      headers++;
      CHECK(f.payload.properties.class_id == 60 && f.payload.properties.body_size == body_len &&
                p->_flags == a._flags && p->delivery_mode == a.delivery_mode && p->timestamp == a.timestamp &&
                same_bytes(p->content_type.bytes, p->content_type.len, a.content_type.bytes, a.content_type.len) &&
                same_bytes(p->message_id.bytes, p->message_id.len, a.message_id.bytes, a.message_id.len),
            "properties decoded by librabbitmq");
      CHECK(cmp_table(&p->headers, h.u.basic.headers, "frames: headers by librabbitmq"), "frames: headers table");
    } else if (f.frame_type == AMQP_FRAME_BODY) {
      size_t n = f.payload.body_fragment.len;
      CHECK(n + 8 <= 4096 && got_body + n <= body_len, "body frame over frame_max or past the body");
      if (got_body + n <= body_len)
        CHECK(same_bytes(f.payload.body_fragment.bytes, n, g_body + got_body, n), "body octets");
      got_body += n;
    }
  }
  CHECK(methods == 1 && headers == 1 && heartbeats == 1 && got_body == body_len,
        "librabbitmq read %d methods, %d headers, %d heartbeats, %zu of %zu body octets", methods, headers, heartbeats,
        got_body, body_len);
  amqp_maybe_release_buffers(g_reader);
  empty_amqp_pool(&pool);
}

static void frames_setup(void) {
  amqp_socket_t *sock;
  int big = 1 << 20;
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, g_fds) != 0) {
    perror("socketpair");
    exit(2);
  }
  setsockopt(g_fds[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  setsockopt(g_fds[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  g_writer = amqp_new_connection();
  sock = amqp_tcp_socket_new(g_writer);
  amqp_tcp_socket_set_sockfd(sock, g_fds[0]);
  g_reader = amqp_new_connection();
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
  frames_setup();
  for (round = 0; round < rounds; round++) {
    check_all_methods(&r, round);
    check_basic_properties(&r, round);
    check_tables(&r, round);
    check_frames_lib_to_ours(&r, round);
    check_frames_ours_to_lib(&r, round);
  }
  printf("librabbitmq %s\n", amqp_version());
  printf("methods: %d methods x %d rounds\n", n_methods, rounds);
  printf("properties: basic, %d properties x %d rounds\n", n_properties, rounds);
  printf("frames: %lu from librabbitmq read by ours, %lu from ours read by librabbitmq\n", g_frames_lib_to_ours,
         g_frames_ours_to_lib);
  printf("%lu checks, %lu failed\n", g_checks, g_failed);
  return g_failed ? 1 : 0;
}
