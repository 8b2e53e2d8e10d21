/* The C client under faults (issue 41, defects 15-19), written on the calls the client had before them
 * (client_open, the per-method calls, client_next, client_close, status_name), so it builds on the old client too
 * and shows what it did. tests/amqp0/c/test_c_engine.py runs it; each mode prints one "OK ..." line or a "FAIL"
 * line (exit 1):
 *
 *   silent HOST PORT      heartbeat 1 s through a proxy: prints READY, reads a line (the test black-holes the
 *                         proxy meanwhile), then queue.declare, client_next and client_close: each call must end
 *                         with AG_CLIENT_LOST within 2 intervals + 1 s (+ slack), not its timeout (8 s here);
 *   refused HOST PORT     a wrong password: AG_CLIENT_CLOSED with the close's 403, no file descriptor left open,
 *                         status_name knowing the status, and a later client_close returning AG_OK;
 *   closed HOST PORT      prints READY <local port> (the test closes the connection with rabbitmqctl): client_next
 *                         gives AG_CLIENT_CLOSED with 320, every later call the same, client_close AG_OK;
 *   big HOST PORT QUEUE   a 16 MiB message published and consumed back (the body compared);
 *   toolarge HOST PORT QUEUE  max_message 1.5 MiB: a 3 MiB delivery is AG_EV_MESSAGE_TOO_LARGE (method and header,
 *                         no body), rejected by its tag; the next delivery (10 octets) comes whole, the connection on;
 *   thread HOST PORT      calls from a thread that does not own the client return AG_CLIENT_THREAD and change
 *                         nothing; after ag_client_handover that thread owns it (and the first one is refused).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "ag_client.h"

static ag_client_t c;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  while (d != NULL && readdir(d) != NULL)
    n++;
  if (d != NULL)
    closedir(d);
  return n;
}

static int fail(const char *what, int rc) {
  printf("FAIL %s: %d %s (reply %u)\n", what, rc, ag_status_name(rc), c.last.reply_code);
  return 1;
}

static int silent(const char *host, int port) {
  char line[64];
  int rc = ag_client_open(&c, host, port, "PLAIN", "guest", "guest", "/", 1);
  if (rc != AG_OK)
    return fail("open", rc);
  c.timeout_ms = 8000;
  printf("READY\n");
  fflush(stdout);
  if (!fgets(line, sizeof line, stdin))
    return fail("no go", 0);
  ag_queue_declare_t qd;
  memset(&qd, 0, sizeof qd);
  qd.queue = AG_LIT("amq.rabbitmq.no-such-queue");
  qd.passive = true;
  double t0 = now();
  int declare = ag_client_queue_declare(&c, 1, &qd, NULL);
  double t1 = now();
  ag_event_t ev;
  int next = ag_client_next(&c, &ev, 8000);
  double t2 = now();
  int closed = ag_client_close(&c);
  double t3 = now();
  if (declare != AG_CLIENT_LOST || t1 - t0 > 3.5)
    return fail("queue.declare on a black-holed link did not end lost within 3.5 s", declare);
  if (next != AG_CLIENT_LOST || t2 - t1 > 0.5)
    return fail("client_next after the loss did not end lost at once", next);
  if (closed != AG_OK || t3 - t2 > 0.5)
    return fail("client_close after the loss", closed);
  printf("OK lost: queue.declare %s, client_next %s, close ok\n", t1 - t0 < 3.5 ? "within 3.5 s" : "late",
         ag_status_name(next));
  return 0;
}

static int refused(const char *host, int port) {
  int before = fds();
  int rc = ag_client_open(&c, host, port, "PLAIN", "guest", "not-the-password", "/", 10);
  int left = fds() - before;
  if (rc != AG_CLIENT_CLOSED || c.last.reply_code != 403)
    return fail("a wrong password did not give AG_CLIENT_CLOSED with 403", rc);
  if (left != 0)
    return fail("file descriptors left open by the failed open", left);
  if (strcmp(ag_status_name(rc), "client-closed") != 0 ||
      strcmp(ag_strerror(AG_CLIENT_TIMEOUT), "Not a status of this library") == 0)
    return fail("status_name / strerror do not know the client's statuses", rc);
  if ((rc = ag_client_close(&c)) != AG_OK)
    return fail("client_close after the failed open", rc);
  printf("OK refused: 403, no descriptor left, %s, close ok\n", ag_status_name(AG_CLIENT_CLOSED));
  return 0;
}

static int closed(const char *host, int port) {
  char line[64];
  int rc = ag_client_open(&c, host, port, "PLAIN", "guest", "guest", "/", 10);
  if (rc != AG_OK)
    return fail("open", rc);
  struct sockaddr_in local;
  socklen_t len = sizeof local;
  if (getsockname(c.fd, (struct sockaddr *)&local, &len) != 0)
    return fail("getsockname", 0);
  printf("READY %u\n", ntohs(local.sin_port));
  fflush(stdout);
  if (!fgets(line, sizeof line, stdin))
    return fail("no go", 0);
  ag_event_t ev;
  int next = ag_client_next(&c, &ev, 10000);
  if (next != AG_CLIENT_CLOSED || c.last.reply_code != 320)
    return fail("the server's close did not come out of client_next as AG_CLIENT_CLOSED 320", next);
  ag_basic_qos_t qos;
  memset(&qos, 0, sizeof qos);
  if ((rc = ag_client_basic_qos(&c, 1, &qos, NULL)) != AG_CLIENT_CLOSED)
    return fail("a call after the server's close", rc);
  if ((rc = ag_client_close(&c)) != AG_OK)
    return fail("client_close after the server's close", rc);
  printf("OK closed: 320 from client_next, later calls %s, close ok\n", ag_status_name(AG_CLIENT_CLOSED));
  return 0;
}

static int big(const char *host, int port, const char *queue) {
  size_t size = (size_t)16 << 20;
  uint8_t *body = malloc(size);
  for (size_t i = 0; i < size; i++)
    body[i] = (uint8_t)(i * 7 + i / 4099);
  int rc = ag_client_open(&c, host, port, "PLAIN", "guest", "guest", "/", 10);
  if (rc != AG_OK)
    return fail("open", rc);
  ag_queue_declare_t qd;
  memset(&qd, 0, sizeof qd);
  qd.queue = ag_cstring(queue);
  qd.exclusive = true;
  if ((rc = ag_client_queue_declare(&c, 1, &qd, NULL)) != AG_OK)
    return fail("queue.declare", rc);
  if ((rc = ag_client_publish(&c, 1, AG_LIT(""), ag_cstring(queue), NULL, (ag_bytes_t){body, size}, NULL)) != AG_OK)
    return fail("publishing 16 MiB", rc);
  ag_basic_consume_t bc;
  memset(&bc, 0, sizeof bc);
  bc.queue = ag_cstring(queue);
  bc.no_ack = true;
  if ((rc = ag_client_basic_consume(&c, 1, &bc, NULL)) != AG_OK)
    return fail("basic.consume", rc);
  ag_event_t ev;
  if ((rc = ag_client_next(&c, &ev, 30000)) != AG_EV_MESSAGE)
    return fail("consuming 16 MiB", rc);
  if (ev.body.len != size || memcmp(ev.body.bytes, body, size) != 0)
    return fail("the 16 MiB body differs", (int)ev.body.len);
  if ((rc = ag_client_close(&c)) != AG_OK)
    return fail("close", rc);
  free(body);
  printf("OK 16 MiB published and consumed back\n");
  return 0;
}

static int toolarge(const char *host, int port, const char *queue) {
  size_t size = (size_t)3 << 20;
  uint8_t *body = calloc(size, 1);
  int rc = ag_client_open(&c, host, port, "PLAIN", "guest", "guest", "/", 10);
  if (rc != AG_OK)
    return fail("open", rc);
  c.max_message = (size_t)3 << 19; /* 1.5 MiB: over the client's own buffer (heap allowed), under the message */
  ag_queue_declare_t qd;
  memset(&qd, 0, sizeof qd);
  qd.queue = ag_cstring(queue);
  qd.exclusive = true;
  if ((rc = ag_client_queue_declare(&c, 1, &qd, NULL)) != AG_OK)
    return fail("queue.declare", rc);
  if ((rc = ag_client_publish(&c, 1, AG_LIT(""), ag_cstring(queue), NULL, (ag_bytes_t){body, size}, NULL)) != AG_OK ||
      (rc = ag_client_publish(&c, 1, AG_LIT(""), ag_cstring(queue), NULL, AG_LIT("0123456789"), NULL)) != AG_OK)
    return fail("publish", rc);
  ag_basic_consume_t bc;
  memset(&bc, 0, sizeof bc);
  bc.queue = ag_cstring(queue);
  if ((rc = ag_client_basic_consume(&c, 1, &bc, NULL)) != AG_OK)
    return fail("basic.consume", rc);
  ag_event_t ev;
  if ((rc = ag_client_next(&c, &ev, 30000)) != AG_EV_MESSAGE_TOO_LARGE || ev.header.body_size != size ||
      ev.body.len != 0 || ev.method.id != AG_BASIC_DELIVER)
    return fail("a 3 MiB delivery over max_message was not AG_EV_MESSAGE_TOO_LARGE with its size", rc);
  ag_basic_reject_t reject;
  memset(&reject, 0, sizeof reject);
  reject.delivery_tag = ev.method.u.basic_deliver.delivery_tag;
  if ((rc = ag_client_basic_reject(&c, 1, &reject, NULL)) != AG_OK)
    return fail("basic.reject", rc);
  if ((rc = ag_client_next(&c, &ev, 30000)) != AG_EV_MESSAGE || ev.body.len != 10)
    return fail("the delivery after the one too large", rc);
  if ((rc = ag_client_close(&c)) != AG_OK)
    return fail("close", rc);
  free(body);
  printf("OK too large: 3 MiB over max_message reported and rejected, the next delivery whole\n");
  return 0;
}

static int thread_rc[3];

static void *other_thread(void *arg) {
  ag_event_t ev;
  thread_rc[0] = ag_client_flush(&c);
  thread_rc[1] = ag_client_next(&c, &ev, 0);
  if (arg != NULL) { /* handed over: this thread owns it now */
    ag_client_handover(&c);
    ag_basic_qos_t qos;
    memset(&qos, 0, sizeof qos);
    thread_rc[2] = ag_client_basic_qos(&c, 1, &qos, NULL);
  }
  return NULL;
}

static int threads(const char *host, int port) {
  pthread_t t;
  int rc = ag_client_open(&c, host, port, "PLAIN", "guest", "guest", "/", 10);
  if (rc != AG_OK)
    return fail("open", rc);
  if (pthread_create(&t, NULL, other_thread, NULL) != 0 || pthread_join(t, NULL) != 0)
    return fail("pthread", 0);
  if (thread_rc[0] != AG_CLIENT_THREAD || thread_rc[1] != AG_CLIENT_THREAD)
    return fail("a call from another thread was not refused", thread_rc[0]);
  ag_basic_qos_t qos;
  memset(&qos, 0, sizeof qos);
  if ((rc = ag_client_basic_qos(&c, 1, &qos, NULL)) != AG_OK)
    return fail("the owner's call after the refused ones", rc);
  if (pthread_create(&t, NULL, other_thread, &c) != 0 || pthread_join(t, NULL) != 0)
    return fail("pthread", 0);
  if (thread_rc[2] != AG_OK)
    return fail("a call after the handover", thread_rc[2]);
  if ((rc = ag_client_basic_qos(&c, 1, &qos, NULL)) != AG_CLIENT_THREAD)
    return fail("the first thread's call after the handover", rc);
  ag_client_handover(&c);
  if ((rc = ag_client_close(&c)) != AG_OK)
    return fail("close", rc);
  printf("OK threads: another thread's calls refused with %s, the handover honoured\n",
         ag_status_name(AG_CLIENT_THREAD));
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4)
    return 3;
  int port = atoi(argv[3]);
  if (strcmp(argv[1], "silent") == 0)
    return silent(argv[2], port);
  if (strcmp(argv[1], "refused") == 0)
    return refused(argv[2], port);
  if (strcmp(argv[1], "closed") == 0)
    return closed(argv[2], port);
  if (strcmp(argv[1], "big") == 0 && argc == 5)
    return big(argv[2], port, argv[4]);
  if (strcmp(argv[1], "toolarge") == 0 && argc == 5)
    return toolarge(argv[2], port, argv[4]);
  if (strcmp(argv[1], "thread") == 0)
    return threads(argv[2], port);
  return 3;
}
