/* The generated blocking client (ag_client.h) against RabbitMQ: AMQPLAIN login, publisher confirms on a
 * confirm.select'ed channel (bodies over frame_max included) waited for with wait_confirms, basic.get of every
 * message back (the body compared), get-empty, a clean close; then a PLAIN login with a wrong password is
 * refused with AG_CLIENT_CLOSED. Usage: client_run host port queue. Prints "OK ..." or "FAIL ..." (exit 1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_client.h"

static ag_client_t c;
static uint8_t body[300000];

static void fail(const char *what, int rc) {
  printf("FAIL %s: %d (reply %u)\n", what, rc, c.last.reply_code);
  exit(1);
}

int main(int argc, char **argv) {
  if (argc != 4)
    return 3;
  int port = atoi(argv[2]), rc;
  ag_bytes_t q = ag_cstring(argv[3]);
  if ((rc = ag_client_open(&c, argv[1], port, "AMQPLAIN", "guest", "guest", "/", 0)) != AG_OK)
    fail("AMQPLAIN login", rc);
  ag_queue_declare_t declare = {0};
  declare.queue = q;
  declare.exclusive = true;
  if ((rc = ag_client_queue_declare(&c, 1, &declare, NULL)) != AG_OK)
    fail("queue.declare", rc);
  ag_confirm_select_t select = {0};
  if ((rc = ag_client_confirm_select(&c, 1, &select, NULL)) != AG_OK)
    fail("confirm.select", rc);
  for (size_t i = 0; i < sizeof body; i++)
    body[i] = (uint8_t)(i * 7);
  for (unsigned i = 0; i < 50; i++) {
    ag_bytes_t b = {body, i % 5 == 0 ? 200000 + i : i};
    if ((rc = ag_client_publish(&c, 1, AG_LIT(""), q, NULL, b, NULL)) != AG_OK)
      fail("publish", rc);
  }
  if ((rc = ag_client_wait_confirms(&c, 1)) != AG_OK)
    fail("wait_confirms", rc);
  for (unsigned i = 0; i < 50; i++) {
    ag_basic_get_t get = {0};
    get.queue = q;
    get.no_ack = true;
    if ((rc = ag_client_basic_get(&c, 1, &get, NULL)) != AG_OK || c.last.type != AG_EV_MESSAGE)
      fail("basic.get", rc);
    size_t len = i % 5 == 0 ? 200000 + i : i;
    if (c.last.body.len != len || (len && memcmp(c.last.body.bytes, body, len) != 0))
      fail("a body differs", (int)i);
  }
  ag_basic_get_t get = {0};
  get.queue = q;
  if ((rc = ag_client_basic_get(&c, 1, &get, NULL)) != AG_OK || c.last.method.id != AG_BASIC_GET_EMPTY)
    fail("basic.get-empty", rc);
  if ((rc = ag_client_close(&c)) != AG_OK)
    fail("close", rc);
  rc = ag_client_open(&c, argv[1], port, "PLAIN", "guest", "not-the-password", "/", 0);
  if (rc != AG_CLIENT_CLOSED)
    fail("a wrong password was not refused", rc);
  ag_client_close(&c);
  printf("OK AMQPLAIN, 50 confirmed, 50 got back, get-empty, wrong password refused\n");
  return 0;
}
