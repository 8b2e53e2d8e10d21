/* The generated sans-I/O engine (ag_engine.h) driven over a POSIX socket against RabbitMQ, the scenario list:
 * the PLAIN handshake with heartbeat 1 s and frame_max 4096, 3 channels, an exclusive queue, publisher confirms
 * for COUNT messages with properties and a headers table (every 10th body over frame_max), basic.qos and a
 * consumer acking each message with every body and header compared, a 404 channel close survived on channel 2
 * and the channel reopened, basic.get-empty, tx rollback and commit read back with basic.get, a server-sent
 * basic.cancel on channel 3 (its queue deleted from channel 1), local misuse refused with nothing written, an
 * idle stretch of 3 s kept alive by the engine's heartbeats, a clean close and the EOF after it; then a second
 * connection that prints "READY <its local port>" and waits for the broker to close it (the test runs
 * rabbitmqctl close_connection on that connection only): connection.close 320 answered, then the EOF.
 * Usage: engine_run host port user password queue count. Prints a line "OK ..." per step, or "FAIL ..."
 * (exit 1); "NO BROKER ..." (exit 2) when nothing answers. */
#define _POSIX_C_SOURCE 200809L
#include "ag_engine.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int fd = -1;
static ag_engine_t eng;
static uint8_t in_store[4096], out_store[1 << 20], msg_store[1 << 16], rbuf[1 << 16];
static unsigned heartbeats_sent; /* heartbeat frames written on their own (the idle stretch's) */

static void fail(const char *what) {
  printf("FAIL %s\n", what);
  exit(1);
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void flush(void) {
  size_t len;
  const uint8_t *d = ag_engine_data_to_send(&eng, &len);
  static const uint8_t heartbeat[8] = {8, 0, 0, 0, 0, 0, 0, 0xce};
  heartbeats_sent += len == 8 && memcmp(d, heartbeat, 8) == 0;
  while (len > 0) {
    ssize_t n = write(fd, d, len);
    if (n <= 0)
      fail("write");
    d += n;
    len -= (size_t)n;
  }
}

/* the next event; waits for the socket at most until deadline (then AG_EV_NONE) */
static int next_until(ag_event_t *ev, uint64_t deadline) {
  for (;;) {
    int t = ag_engine_next_event(&eng, ev);
    flush(); /* the engine's answers (close-ok, flow-ok) and heartbeats */
    if (t != AG_EV_NONE)
      return t;
    uint64_t now = now_ms();
    if (now >= deadline)
      return AG_EV_NONE;
    struct pollfd p = {fd, POLLIN, 0};
    int wait = (int)(deadline - now < 200 ? deadline - now : 200);
    if (poll(&p, 1, wait) > 0) {
      ssize_t n = read(fd, rbuf, sizeof rbuf);
      ag_engine_receive(&eng, rbuf, n > 0 ? (size_t)n : 0);
    }
    ag_engine_tick(&eng, now_ms());
  }
}

static int next(ag_event_t *ev) {
  int t = next_until(ev, now_ms() + 10000);
  if (t == AG_EV_NONE)
    fail("no event within 10 s");
  if (t == AG_EV_PROTOCOL_ERROR) {
    printf("FAIL protocol error %u: %s\n", ev->reply_code, ev->what);
    exit(1);
  }
  return t;
}

static void call(uint16_t ch, const ag_method_t *m) {
  int rc = ag_engine_send_method(&eng, ch, m);
  if (rc != AG_OK) {
    printf("FAIL send %s on %u: %s\n", ag_method_name(m->id), ch, ag_status_name(rc));
    exit(1);
  }
  flush();
}

/* waits for a method event with this id (other events fail) */
static void expect(uint32_t id, ag_event_t *ev) {
  int t = next(ev);
  if (t == AG_EV_METHOD && ev->method.id == id)
    return;
  if ((t == AG_EV_CONNECTION_NEGOTIATED || t == AG_EV_CHANNEL_OPENED) && ev->method.id == id)
    return;
  printf("FAIL wanted %s, got event %d (%s, code %u %.*s)\n", ag_method_name(id), t, ag_method_name(ev->method.id),
         ev->reply_code, (int)ev->reply_text.len, (const char *)ev->reply_text.bytes);
  exit(1);
}

static ag_method_t method(uint32_t id) {
  ag_method_t m;
  memset(&m, 0, sizeof m);
  m.id = id;
  return m;
}

static void body_of(unsigned i, uint8_t *b, size_t *len) {
  *len = i % 10 == 0 ? 10000 + i : i % 7 == 0 ? 0 : 16 + i;
  for (size_t k = 0; k < *len; k++)
    b[k] = (uint8_t)(i * 31 + k);
}

static void publish(uint16_t ch, ag_bytes_t queue, unsigned i, uint64_t *tag) {
  static uint8_t body[20000], hdr[256];
  size_t len;
  body_of(i, body, &len);
  ag_table_writer_t w;
  ag_table_writer_init(&w, hdr, sizeof hdr);
  ag_table_add_i32(&w, AG_LIT("index"), (int32_t)i);
  ag_table_add_str(&w, AG_LIT("origin"), AG_LIT("engine_run"));
  ag_content_header_t h;
  memset(&h, 0, sizeof h);
  h.class_id = AG_CLASS_BASIC;
  h.u.basic.flags = AG_BASIC_CONTENT_TYPE_FLAG | AG_BASIC_HEADERS_FLAG | AG_BASIC_DELIVERY_MODE_FLAG;
  h.u.basic.content_type = AG_LIT("application/octet-stream");
  h.u.basic.delivery_mode = 1;
  if (ag_table_writer_finish(&w, &h.u.basic.headers) != AG_OK)
    fail("headers");
  ag_method_t m = method(AG_BASIC_PUBLISH);
  m.u.basic_publish.routing_key = queue;
  int rc = ag_engine_publish(&eng, ch, &m, &h, body, len, tag);
  if (rc != AG_OK) {
    printf("FAIL publish %u: %s\n", i, ag_status_name(rc));
    exit(1);
  }
  flush();
}

/* the message's body and its "index" header are the ones message i was published with */
static void check_message(const ag_event_t *ev, unsigned i) {
  static uint8_t want[20000];
  size_t len;
  ag_field_value_t v;
  body_of(i, want, &len);
  if (ev->body.len != len || (len && memcmp(ev->body.bytes, want, len) != 0))
    fail("a body differs");
  if (ag_table_get(ev->header.u.basic.headers, AG_LIT("index"), &v) != 1 || v.v.i != (int64_t)i)
    fail("the headers table differs");
  if (ev->header.u.basic.content_type.len != 24 || ev->header.u.basic.delivery_mode != 1)
    fail("a property differs");
}

/* connects and negotiates (PLAIN, heartbeat 1 s, frame_max 4096); the client properties carry the capability
   RabbitMQ wants before it sends basic.cancel, and a connection name */
static void open_connection(char **argv, const char *name) {
  struct addrinfo hints, *ai;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(argv[1], argv[2], &hints, &ai) != 0)
    fail("getaddrinfo");
  fd = socket(ai->ai_family, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    printf("NO BROKER no AMQP broker answers on %s:%s\n", argv[1], argv[2]);
    exit(2);
  }
  freeaddrinfo(ai);
  ag_engine_config_t cfg = {4096, 8, 1, in_store, sizeof in_store, out_store, sizeof out_store,
                            msg_store, sizeof msg_store, AG_ROLE_CLIENT};
  if (ag_engine_init(&eng, &cfg) != AG_OK || ag_engine_initiate(&eng) != AG_OK)
    fail("init");
  ag_engine_tick(&eng, now_ms());
  flush();
  ag_event_t ev;

  /* negotiation: start, start-ok (PLAIN), tune, tune-ok, open */
  expect(AG_CONNECTION_START, &ev);
  char resp[512];
  int rlen = snprintf(resp, sizeof resp, "%c%s%c%s", 0, argv[3], 0, argv[4]);
  uint8_t props[256];
  ag_table_writer_t w;
  ag_table_writer_init(&w, props, sizeof props);
  ag_table_add_str(&w, AG_LIT("connection_name"), ag_cstring(name));
  ag_table_put_key(&w, AG_LIT("capabilities"));
  ag_table_begin_table(&w);
  ag_table_add_bool(&w, AG_LIT("consumer_cancel_notify"), true);
  ag_table_add_bool(&w, AG_LIT("publisher_confirms"), true);
  ag_table_end_table(&w);
  ag_method_t m = method(AG_CONNECTION_START_OK);
  if (ag_table_writer_finish(&w, &m.u.connection_start_ok.client_properties) != AG_OK)
    fail("client properties");
  m.u.connection_start_ok.mechanism = AG_LIT("PLAIN");
  m.u.connection_start_ok.response = (ag_bytes_t){(const uint8_t *)resp, (size_t)rlen};
  m.u.connection_start_ok.locale = AG_LIT("en_US");
  call(0, &m);
  expect(AG_CONNECTION_TUNE, &ev);
  /* tune-ok values over the server's tune (its limits, not zero), 0 for one of them (no limit) or frame_max under
     frame-min-size: refused with ERR_VALUE and nothing written */
  const ag_connection_tune_t *tune = &ev.method.u.connection_tune;
  if (tune->frame_max == 0 || tune->channel_max == 0 || tune->frame_max == UINT32_MAX || tune->channel_max == 65535)
    fail("the broker's tune sets no frame_max or channel_max");
  const uint32_t over[5][2] = {{tune->channel_max, tune->frame_max + 1u},
                               {tune->channel_max + 1u, 4096},
                               {0, 4096},
                               {tune->channel_max, 0},
                               {tune->channel_max, 4095}};
  for (int i = 0; i < 5; i++) {
    size_t left;
    m = method(AG_CONNECTION_TUNE_OK);
    m.u.connection_tune_ok.channel_max = (uint16_t)over[i][0];
    m.u.connection_tune_ok.frame_max = over[i][1];
    if (ag_engine_send_method(&eng, 0, &m) != AG_ERR_VALUE)
      fail("a tune-ok over the server's tune was not refused with ERR_VALUE");
    (void)ag_engine_data_to_send(&eng, &left);
    if (left != 0)
      fail("a refused tune-ok wrote octets");
  }
  ag_engine_tune_ok(&eng, &ev.method, &m);
  call(0, &m);
  if (eng.heartbeat != 1 || eng.frame_max != 4096)
    fail("tune-ok did not agree heartbeat 1 and frame_max 4096");
  m = method(AG_CONNECTION_OPEN);
  m.u.connection_open.virtual_host = AG_LIT("/");
  call(0, &m);
  expect(AG_CONNECTION_OPEN_OK, &ev);
}

int main(int argc, char **argv) {
  if (argc != 7)
    return 3;
  setvbuf(stdout, NULL, _IOLBF, 0); /* the test reads the lines as they come */
  unsigned count = (unsigned)atoi(argv[6]);
  ag_bytes_t queue = ag_cstring(argv[5]);
  open_connection(argv, argv[5]);
  printf("OK negotiated heartbeat 1 frame_max 4096\n");
  ag_event_t ev;
  ag_method_t m;

  /* local misuse: refused with a status and nothing written */
  m = method(AG_BASIC_GET);
  size_t before;
  (void)ag_engine_data_to_send(&eng, &before);
  if (ag_engine_send_method(&eng, 3, &m) != AG_ERR_MISUSE || ag_engine_send_method(&eng, 0, &m) != AG_ERR_MISUSE)
    fail("basic.get on a channel not open (or on 0) was not refused");
  m = method(AG_BASIC_DELIVER);
  if (ag_engine_send_method(&eng, 1, &m) != AG_ERR_MISUSE)
    fail("basic.deliver (the server's method) was not refused");
  (void)ag_engine_data_to_send(&eng, &before);
  if (before != 0)
    fail("a refused send wrote octets");

  /* channel 1: exclusive queue, confirms */
  m = method(AG_CHANNEL_OPEN);
  call(1, &m);
  expect(AG_CHANNEL_OPEN_OK, &ev);
  m = method(AG_QUEUE_DECLARE);
  m.u.queue_declare.queue = queue;
  m.u.queue_declare.exclusive = true;
  call(1, &m);
  m = method(AG_QUEUE_DECLARE); /* a second synchronous request before the reply */
  if (ag_engine_send_method(&eng, 1, &m) != AG_ERR_MISUSE)
    fail("a second synchronous request before the reply was not refused");
  expect(AG_QUEUE_DECLARE_OK, &ev);
  m = method(AG_CONFIRM_SELECT);
  call(1, &m);
  expect(AG_CONFIRM_SELECT_OK, &ev);
  uint64_t acked = 0, last_tag = 0;
  for (unsigned i = 0; i < count; i++) {
    uint64_t tag;
    publish(1, queue, i, &tag);
    if (tag != last_tag + 1)
      fail("confirm tags are not 1, 2, 3...");
    last_tag = tag;
  }
  while (acked < count) {
    int t = next(&ev);
    if (t != AG_EV_PUBLISH_ACKED)
      fail("wanted a publish confirm");
    acked = ev.multiple ? ev.delivery_tag : acked + 1;
  }
  if (eng.ch[1].unconfirmed != 0)
    fail("the engine counts unconfirmed publishes after every confirm");
  printf("OK %u published, %llu confirmed\n", count, (unsigned long long)acked);

  /* qos and a consumer acking each message */
  m = method(AG_BASIC_QOS);
  m.u.basic_qos.prefetch_count = 10;
  call(1, &m);
  expect(AG_BASIC_QOS_OK, &ev);
  m = method(AG_BASIC_CONSUME);
  m.u.basic_consume.queue = queue;
  m.u.basic_consume.consumer_tag = AG_LIT("c1");
  call(1, &m);
  expect(AG_BASIC_CONSUME_OK, &ev);
  unsigned over = 0;
  for (unsigned i = 0; i < count; i++) {
    if (next(&ev) != AG_EV_MESSAGE || ev.method.id != AG_BASIC_DELIVER)
      fail("wanted a delivery");
    check_message(&ev, i);
    over += ev.body.len > 4096;
    m = method(AG_BASIC_ACK);
    m.u.basic_ack.delivery_tag = ev.method.u.basic_deliver.delivery_tag;
    call(1, &m);
  }
  m = method(AG_BASIC_CANCEL);
  m.u.basic_cancel.consumer_tag = AG_LIT("c1");
  call(1, &m);
  expect(AG_BASIC_CANCEL_OK, &ev);
  printf("OK qos 10, %u deliveries acked, %u bodies over frame_max, bodies and headers as published\n", count,
         over);

  /* channel 2: a 404 closes it, the engine answers close-ok, it opens again */
  m = method(AG_CHANNEL_OPEN);
  call(2, &m);
  expect(AG_CHANNEL_OPEN_OK, &ev);
  m = method(AG_QUEUE_DECLARE);
  m.u.queue_declare.queue = AG_LIT("amqgen-c-engine-no-such-queue");
  m.u.queue_declare.passive = true;
  call(2, &m);
  if (next(&ev) != AG_EV_CHANNEL_CLOSED || ev.channel != 2 || ev.reply_code != 404)
    fail("wanted channel 2 closed with 404");
  m = method(AG_BASIC_GET);
  if (ag_engine_send_method(&eng, 2, &m) != AG_ERR_MISUSE)
    fail("a send on the closed channel was not refused");
  m = method(AG_CHANNEL_OPEN);
  call(2, &m);
  expect(AG_CHANNEL_OPEN_OK, &ev);
  printf("OK 404 closed channel 2, the engine answered, channel 2 reopened\n");
  m = method(AG_BASIC_GET);
  m.u.basic_get.queue = queue;
  m.u.basic_get.no_ack = true;
  call(2, &m);
  expect(AG_BASIC_GET_EMPTY, &ev);

  /* tx on channel 2: a rolled back publish is not delivered, a committed one is */
  m = method(AG_TX_SELECT);
  call(2, &m);
  expect(AG_TX_SELECT_OK, &ev);
  publish(2, queue, 7, NULL);
  m = method(AG_TX_ROLLBACK);
  call(2, &m);
  expect(AG_TX_ROLLBACK_OK, &ev);
  publish(2, queue, 10, NULL);
  m = method(AG_TX_COMMIT);
  call(2, &m);
  expect(AG_TX_COMMIT_OK, &ev);
  m = method(AG_BASIC_GET);
  m.u.basic_get.queue = queue;
  m.u.basic_get.no_ack = true;
  call(2, &m);
  if (next(&ev) != AG_EV_MESSAGE || ev.method.id != AG_BASIC_GET_OK)
    fail("wanted basic.get-ok");
  check_message(&ev, 10);
  m = method(AG_BASIC_GET);
  m.u.basic_get.queue = queue;
  m.u.basic_get.no_ack = true;
  call(2, &m);
  expect(AG_BASIC_GET_EMPTY, &ev);
  printf("OK get-empty, tx rollback not delivered, tx commit delivered by get-ok\n");

  /* channel 3: a consumer on a second queue, deleted from channel 1: the server cancels the consumer */
  char second[300];
  snprintf(second, sizeof second, "%s-cancelled", argv[5]);
  m = method(AG_CHANNEL_OPEN);
  call(3, &m);
  expect(AG_CHANNEL_OPEN_OK, &ev);
  m = method(AG_QUEUE_DECLARE);
  m.u.queue_declare.queue = ag_cstring(second);
  m.u.queue_declare.exclusive = true;
  call(3, &m);
  expect(AG_QUEUE_DECLARE_OK, &ev);
  m = method(AG_BASIC_CONSUME);
  m.u.basic_consume.queue = ag_cstring(second);
  m.u.basic_consume.consumer_tag = AG_LIT("c3");
  call(3, &m);
  expect(AG_BASIC_CONSUME_OK, &ev);
  m = method(AG_QUEUE_DELETE);
  m.u.queue_delete.queue = ag_cstring(second);
  call(1, &m);
  bool deleted = false, cancelled = false; /* the two may come in either order */
  while (!deleted || !cancelled) {
    int t = next(&ev);
    if (t == AG_EV_METHOD && ev.channel == 1 && ev.method.id == AG_QUEUE_DELETE_OK && !deleted)
      deleted = true;
    else if (t == AG_EV_METHOD && ev.channel == 3 && ev.method.id == AG_BASIC_CANCEL && !cancelled &&
             ev.method.u.basic_cancel.consumer_tag.len == 2 &&
             memcmp(ev.method.u.basic_cancel.consumer_tag.bytes, "c3", 2) == 0)
      cancelled = true;
    else
      fail("wanted queue.delete-ok on 1 and basic.cancel of c3 on 3");
  }
  printf("OK server-sent basic.cancel on channel 3\n");

  /* 3 s idle: only the engine's heartbeats; RabbitMQ closes a connection silent for 2 intervals */
  uint64_t until = now_ms() + 3000;
  unsigned beats = heartbeats_sent;
  int t = next_until(&ev, until);
  if (t != AG_EV_NONE) {
    printf("FAIL event %d (code %u) in the idle stretch\n", t, ev.reply_code);
    exit(1);
  }
  printf("OK idle 3 s, %u heartbeats sent\n", heartbeats_sent - beats);

  /* our channel close, then the connection's; then the peer's EOF */
  m = method(AG_CHANNEL_CLOSE);
  m.u.channel_close.reply_code = 200;
  call(2, &m);
  if (next(&ev) != AG_EV_CHANNEL_CLOSED || ev.channel != 2)
    fail("wanted channel 2's close-ok");
  if (ag_engine_close(&eng, 200, AG_LIT("bye")) != AG_OK)
    fail("close");
  flush();
  if (next(&ev) != AG_EV_CONNECTION_CLOSED)
    fail("wanted the connection's close-ok");
  if (next(&ev) != AG_EV_CONNECTION_LOST || !ev.closed)
    fail("wanted the end of the stream after the close");
  close(fd);
  printf("OK clean close, then the end of the stream: %s\n", ev.what);

  /* a second connection, which the broker closes (the test's rabbitmqctl close_connection) */
  char name[300];
  snprintf(name, sizeof name, "%s-forced", argv[5]);
  open_connection(argv, name);
  m = method(AG_CHANNEL_OPEN);
  call(1, &m);
  expect(AG_CHANNEL_OPEN_OK, &ev);
  struct sockaddr_storage local;
  socklen_t local_len = sizeof local;
  if (getsockname(fd, (struct sockaddr *)&local, &local_len) != 0)
    fail("getsockname");
  printf("READY %u\n", ntohs(local.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&local)->sin6_port
                                                          : ((struct sockaddr_in *)&local)->sin_port));
  t = next_until(&ev, now_ms() + 60000);
  if (t != AG_EV_CONNECTION_CLOSED || ev.reply_code != 320)
    fail("wanted the broker's connection.close 320 within 60 s");
  if (next(&ev) != AG_EV_CONNECTION_LOST || !ev.closed)
    fail("wanted the end of the stream after the broker's close");
  close(fd);
  printf("OK forced close 320 answered, then the end of the stream: %s\n", ev.what);
  return 0;
}
