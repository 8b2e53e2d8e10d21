/* The generated C client (client/ag_client.h) against librabbitmq 0.11 (-DBENCH_LIBRABBITMQ) on the same work,
 * against RabbitMQ, with a real heartbeat (issue 41): an exclusive queue on channel 1, confirm.select, then three
 * phases, each timed (the process's user and system CPU from getrusage, and the wall time) and, under callgrind,
 * counted (instructions, CALLGRIND_ZERO_STATS / CALLGRIND_DUMP_STATS_AT around it):
 *   awaited    AWAITED publishes of 128 octets, each one's confirm awaited before the next;
 *   pipelined  COUNT publishes in batches of 1,000, each batch's confirms awaited;
 *   consume    basic.qos 100 and a consumer acking each of the AWAITED + COUNT deliveries (every body compared).
 * Prints "PHASE USER SYS WALL MESSAGES" per phase (microseconds). Connecting and closing are outside the phases.
 * Usage: bench_c_client host port queue count awaited heartbeat. Run by bench/bench_c_client.py. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <valgrind/callgrind.h>

#ifdef BENCH_LIBRABBITMQ
#include <amqp.h>
#include <amqp_tcp_socket.h>
#else
#include "ag_client.h"
#endif

#define BATCH 1000
#define SIZE 128

static uint8_t body[SIZE];

static void fail(const char *what) {
  printf("FAIL %s\n", what);
  exit(1);
}

typedef struct {
  long user, sys, wall;
} sample_t;

static void sample(sample_t *s) {
  struct rusage ru;
  struct timespec ts;
  getrusage(RUSAGE_SELF, &ru);
  clock_gettime(CLOCK_MONOTONIC, &ts);
  s->user = ru.ru_utime.tv_sec * 1000000L + ru.ru_utime.tv_usec;
  s->sys = ru.ru_stime.tv_sec * 1000000L + ru.ru_stime.tv_usec;
  s->wall = ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static sample_t started;

static void begin(void) {
  CALLGRIND_ZERO_STATS;
  sample(&started);
}

static void done(const char *phase, unsigned messages) {
  sample_t now;
  sample(&now);
  CALLGRIND_DUMP_STATS_AT(phase);
  printf("%s %ld %ld %ld %u\n", phase, now.user - started.user, now.sys - started.sys, now.wall - started.wall,
         messages);
}

static void check_body(const void *p, size_t len) {
  if (len != SIZE || memcmp(p, body, SIZE) != 0)
    fail("a body differs");
}

#ifdef BENCH_LIBRABBITMQ
static amqp_connection_state_t conn;
static uint64_t acked;

static void rpc_ok(const char *what) {
  if (amqp_get_rpc_reply(conn).reply_type != AMQP_RESPONSE_NORMAL)
    fail(what);
}

static void connect_to(const char *host, int port, const char *queue, int heartbeat) {
  conn = amqp_new_connection();
  amqp_socket_t *s = amqp_tcp_socket_new(conn);
  if (s == NULL || amqp_socket_open(s, host, port) != AMQP_STATUS_OK)
    fail("connect");
  if (amqp_login(conn, "/", 0, 131072, heartbeat, AMQP_SASL_METHOD_PLAIN, "guest", "guest").reply_type !=
      AMQP_RESPONSE_NORMAL)
    fail("login");
  amqp_channel_open(conn, 1);
  rpc_ok("channel.open");
  amqp_queue_declare(conn, 1, amqp_cstring_bytes(queue), 0, 0, 1, 0, amqp_empty_table);
  rpc_ok("queue.declare");
  amqp_confirm_select(conn, 1);
  rpc_ok("confirm.select");
}

/* reads frames until every publish up to last is acked (librabbitmq keeps the heartbeats while it waits) */
static void wait_confirms(uint64_t last) {
  while (acked < last) {
    amqp_frame_t f;
    if (amqp_simple_wait_frame(conn, &f) != AMQP_STATUS_OK)
      fail("wait frame");
    if (f.frame_type != AMQP_FRAME_METHOD || f.payload.method.id != AMQP_BASIC_ACK_METHOD)
      fail("wanted basic.ack");
    amqp_basic_ack_t *a = f.payload.method.decoded;
    acked = a->multiple ? a->delivery_tag : acked + 1;
  }
  amqp_maybe_release_buffers(conn);
}

static void publish(amqp_bytes_t q) {
  amqp_bytes_t payload = {SIZE, body};
  if (amqp_basic_publish(conn, 1, amqp_empty_bytes, q, 0, 0, NULL, payload) != AMQP_STATUS_OK)
    fail("publish");
}

__attribute__((noinline)) static void bench_phases(const char *queue, unsigned count, unsigned awaited) {
  amqp_bytes_t q = amqp_cstring_bytes(queue);
  uint64_t sent = 0;
  begin();
  for (unsigned i = 0; i < awaited; i++) {
    publish(q);
    wait_confirms(++sent);
  }
  done("awaited", awaited);
  begin();
  for (unsigned i = 1; i <= count; i++) {
    publish(q);
    sent++;
    if (i % BATCH == 0 || i == count)
      wait_confirms(sent);
  }
  done("pipelined", count);
  begin();
  amqp_basic_qos(conn, 1, 0, 100, 0);
  rpc_ok("basic.qos");
  amqp_basic_consume(conn, 1, q, amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
  rpc_ok("basic.consume");
  for (unsigned i = 0; i < count + awaited; i++) {
    amqp_envelope_t env;
    amqp_maybe_release_buffers(conn);
    if (amqp_consume_message(conn, &env, NULL, 0).reply_type != AMQP_RESPONSE_NORMAL)
      fail("consume");
    check_body(env.message.body.bytes, env.message.body.len);
    if (amqp_basic_ack(conn, 1, env.delivery_tag, 0) != AMQP_STATUS_OK)
      fail("ack");
    amqp_destroy_envelope(&env);
  }
  done("consume", count + awaited);
}

static void close_all(void) {
  amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
  amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn);
}
#else
static ag_client_t client; /* the client holds its buffers (over 1 MiB): static, not on the stack */

static void connect_to(const char *host, int port, const char *queue, int heartbeat) {
  if (ag_client_open(&client, host, port, "PLAIN", "guest", "guest", "/", (uint16_t)heartbeat) != AG_OK)
    fail("connect");
  ag_queue_declare_t qd;
  memset(&qd, 0, sizeof qd);
  qd.queue = ag_cstring(queue);
  qd.exclusive = true;
  ag_confirm_select_t cs;
  memset(&cs, 0, sizeof cs);
  if (ag_client_queue_declare(&client, 1, &qd, NULL) != AG_OK ||
      ag_client_confirm_select(&client, 1, &cs, NULL) != AG_OK)
    fail("queue.declare, confirm.select");
}

__attribute__((noinline)) static void bench_phases(const char *queue, unsigned count, unsigned awaited) {
  ag_bytes_t q = ag_cstring(queue), payload = {body, SIZE};
  begin();
  for (unsigned i = 0; i < awaited; i++)
    if (ag_client_publish(&client, 1, AG_LIT(""), q, NULL, payload, NULL) != AG_OK ||
        ag_client_wait_confirms(&client, 1) != AG_OK)
      fail("awaited publish");
  done("awaited", awaited);
  begin();
  for (unsigned i = 1; i <= count; i++) {
    if (ag_client_publish(&client, 1, AG_LIT(""), q, NULL, payload, NULL) != AG_OK)
      fail("publish");
    if ((i % BATCH == 0 || i == count) && ag_client_wait_confirms(&client, 1) != AG_OK)
      fail("confirms");
  }
  done("pipelined", count);
  begin();
  ag_basic_qos_t qos;
  memset(&qos, 0, sizeof qos);
  qos.prefetch_count = 100;
  ag_basic_consume_t bc;
  memset(&bc, 0, sizeof bc);
  bc.queue = q;
  if (ag_client_basic_qos(&client, 1, &qos, NULL) != AG_OK ||
      ag_client_basic_consume(&client, 1, &bc, NULL) != AG_OK)
    fail("basic.qos, basic.consume");
  ag_basic_ack_t ack;
  memset(&ack, 0, sizeof ack);
  for (unsigned i = 0; i < count + awaited; i++) {
    ag_event_t ev;
    if (ag_client_next(&client, &ev, 10000) != AG_EV_MESSAGE)
      fail("consume");
    check_body(ev.body.bytes, ev.body.len);
    ack.delivery_tag = ev.method.u.basic_deliver.delivery_tag;
    if (ag_client_basic_ack(&client, 1, &ack, NULL) != AG_OK)
      fail("ack");
  }
  done("consume", count + awaited);
}

static void close_all(void) {
  if (ag_client_close(&client) != AG_OK)
    fail("close");
}
#endif

int main(int argc, char **argv) {
  if (argc != 7)
    return 3;
  for (int i = 0; i < SIZE; i++)
    body[i] = (uint8_t)i;
  connect_to(argv[1], atoi(argv[2]), argv[3], atoi(argv[6]));
  bench_phases(argv[3], (unsigned)atoi(argv[4]), (unsigned)atoi(argv[5]));
  close_all();
  return 0;
}
