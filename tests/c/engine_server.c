/* A minimal AMQP 0-9-1 server on the generated engine's server role (tests/amqp0/c/test_c_server.py): listens on
 * 127.0.0.1 (port 0: the kernel's pick, printed as "port N"), takes one connection over a POSIX socket,
 * logs in guest/guest (PLAIN), answers channel.open, queue.declare and confirm.select, and prints what the client
 * publishes (routing key, the "h2" header's value, the body in hex) and the closes; on a channel in confirm mode
 * it numbers the publishes itself (the engine does not, as the Python engine's server role) and acks each with
 * its tag ("ack <channel> <tag>"); exit 0 after the client's close
 * and the end of the stream, 1 on a protocol error or anything unexpected. */
#define _POSIX_C_SOURCE 200809L
#include "ag_engine.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static ag_engine_t eng;
static uint8_t in_store[1 << 16], out_store[1 << 17], msg_store[1 << 17], rbuf[1 << 16];
static int fd = -1;
static bool clean; /* the end of the stream came after a finished close handshake */
static uint64_t published[AG_ENGINE_MAX_CHANNELS + 1]; /* a confirming channel's publishes (0: not confirming) */
static bool confirming[AG_ENGINE_MAX_CHANNELS + 1];

static void fail(const char *what) {
  printf("FAIL %s\n", what);
  exit(1);
}

static void flush(void) {
  size_t n;
  const uint8_t *d = ag_engine_data_to_send(&eng, &n);
  while (n > 0) {
    ssize_t w = write(fd, d, n);
    if (w <= 0)
      fail("write");
    d += w;
    n -= (size_t)w;
  }
}

static ag_method_t method(uint32_t id) {
  ag_method_t m;
  memset(&m, 0, sizeof m);
  m.id = id;
  return m;
}

static void call(uint16_t ch, const ag_method_t *m) {
  if (ag_engine_send_method(&eng, ch, m) != AG_OK)
    fail("send refused");
}

static void print_bytes(ag_bytes_t b) { printf("%.*s", (int)b.len, (const char *)b.bytes); }

/* one event: the server's answer, or a line of the log; 1 when the connection is over */
static int on_event(const ag_event_t *ev) {
  ag_method_t m;
  switch (ev->type) {
  case AG_EV_PROTOCOL_HEADER:
    m = method(AG_CONNECTION_START);
    m.u.connection_start.version_major = 0;
    m.u.connection_start.version_minor = 9;
    m.u.connection_start.mechanisms = AG_LIT("PLAIN");
    m.u.connection_start.locales = AG_LIT("en_US");
    call(0, &m);
    return 0;
  case AG_EV_CONNECTION_NEGOTIATED:
    printf("negotiated %u %u %u\n", eng.frame_max, eng.channel_max, eng.heartbeat);
    return 0;
  case AG_EV_METHOD:
    switch (ev->method.id) {
    case AG_CONNECTION_START_OK: {
      const ag_connection_start_ok_t *s = &ev->method.u.connection_start_ok;
      static const char plain[] = "\0guest\0guest";
      if (s->mechanism.len != 5 || memcmp(s->mechanism.bytes, "PLAIN", 5) != 0 ||
          s->response.len != sizeof plain - 1 || memcmp(s->response.bytes, plain, sizeof plain - 1) != 0)
        fail("login");
      printf("login guest\n");
      ag_engine_tune(&eng, &m);
      call(0, &m);
      return 0;
    }
    case AG_CONNECTION_OPEN:
      m = method(AG_CONNECTION_OPEN_OK);
      call(0, &m);
      return 0;
    case AG_CHANNEL_OPEN:
      printf("channel-open %u\n", ev->channel);
      m = method(AG_CHANNEL_OPEN_OK);
      call(ev->channel, &m);
      return 0;
    case AG_QUEUE_DECLARE:
      printf("declare ");
      print_bytes(ev->method.u.queue_declare.queue);
      printf("\n");
      m = method(AG_QUEUE_DECLARE_OK);
      m.u.queue_declare_ok.queue = ev->method.u.queue_declare.queue;
      call(ev->channel, &m);
      return 0;
    case AG_CONFIRM_SELECT:
      printf("confirm-select %u\n", ev->channel);
      confirming[ev->channel] = true;
      published[ev->channel] = 0; /* publishes from now on are numbered from 1 */
      if (!ev->method.u.confirm_select.nowait) {
        m = method(AG_CONFIRM_SELECT_OK);
        call(ev->channel, &m);
      }
      return 0;
    default:
      return 0; /* tune-ok: the engine holds to it */
    }
  case AG_EV_MESSAGE: {
    ag_field_value_t v;
    printf("publish ");
    print_bytes(ev->method.u.basic_publish.routing_key);
    printf(" h2=");
    if (ag_table_get(ev->header.u.basic.headers, AG_LIT("h2"), &v) == 1 && v.type == 'S')
      print_bytes(v.v.bytes);
    printf(" body=");
    for (size_t i = 0; i < ev->body.len; i++)
      printf("%02x", ev->body.bytes[i]);
    printf("\n");
    if (confirming[ev->channel]) {
      m = method(AG_BASIC_ACK);
      m.u.basic_ack.delivery_tag = ++published[ev->channel];
      call(ev->channel, &m);
      printf("ack %u %llu\n", ev->channel, (unsigned long long)published[ev->channel]);
    }
    return 0;
  }
  case AG_EV_CHANNEL_CLOSED:
    printf("channel-closed %u %u\n", ev->channel, ev->reply_code);
    return 0;
  case AG_EV_CONNECTION_CLOSED:
    printf("connection-closed %u\n", ev->reply_code);
    return 0;
  case AG_EV_CONNECTION_LOST:
    printf("lost %d %s\n", ev->closed ? 1 : 0, ev->what);
    clean = ev->closed;
    return 1;
  case AG_EV_PROTOCOL_ERROR:
    printf("protocol-error %u %s\n", ev->reply_code, ev->what);
    (void)ag_engine_close(&eng, ev->reply_code, ag_cstring(ev->what));
    flush();
    exit(1);
  default:
    printf("event %d\n", ev->type);
    return 0;
  }
}

int main(void) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  socklen_t alen = sizeof a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 1) != 0 ||
      getsockname(ls, (struct sockaddr *)&a, &alen) != 0)
    fail("listen");
  printf("port %u\n", ntohs(a.sin_port));
  fflush(stdout);
  fd = accept(ls, NULL, NULL);
  if (fd < 0)
    fail("accept");
  close(ls);
  ag_engine_config_t cfg = {4096, 8, 0, in_store, sizeof in_store, out_store, sizeof out_store,
                            msg_store, sizeof msg_store, AG_ROLE_SERVER};
  if (ag_engine_init(&eng, &cfg) != AG_OK)
    fail("init");
  for (;;) {
    ssize_t n = read(fd, rbuf, sizeof rbuf);
    if (n < 0)
      fail("read");
    ag_engine_receive(&eng, rbuf, (size_t)n); /* 0: the end of the stream, an input */
    ag_event_t ev;
    int done = 0;
    while (ag_engine_next_event(&eng, &ev) != AG_EV_NONE)
      done |= on_event(&ev);
    flush();
    if (done) {
      close(fd);
      return clean ? 0 : 1;
    }
  }
}
