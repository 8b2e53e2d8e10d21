/* The exercise on the generated C client (amqgen render --lang c --option prefix=ag): log in,
 * declare an exclusive queue, publish 100 messages with properties and a headers table, read them back
 * with acks, close. Usage: main [host] [port]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_client.h"

static ag_client_t client; /* large (its buffers): static, not on the stack */

static int die(const char *what, int rc) {
  fprintf(stderr, "%s failed: %d (reply %u)\n", what, rc, client.last.reply_code);
  return 1;
}

int main(int argc, char **argv) {
  const char *host = argc > 1 ? argv[1] : "127.0.0.1";
  int port = argc > 2 ? atoi(argv[2]) : 5672, rc;
  if ((rc = ag_client_open(&client, host, port, "PLAIN", "guest", "guest", "/", 30)) != AG_OK)
    return die("connect", rc);
  ag_queue_declare_t declare = {0};
  declare.exclusive = true;
  ag_method_t reply;
  if ((rc = ag_client_queue_declare(&client, 1, &declare, &reply)) != AG_OK)
    return die("queue.declare", rc);
  char queue[256]; /* the reply lives until the next call: keep the name */
  ag_bytes_t name = reply.u.queue_declare_ok.queue;
  memcpy(queue, name.bytes, name.len);
  ag_bytes_t q = {(const uint8_t *)queue, name.len};
  for (int i = 0; i < 100; i++) {
    uint8_t table[64];
    char body[32];
    ag_table_writer_t w;
    ag_content_header_t h = {0};
    ag_table_writer_init(&w, table, sizeof table);
    ag_table_add_i32(&w, AG_LIT("index"), i);
    h.class_id = AG_CLASS_BASIC;
    h.u.basic.flags = AG_BASIC_CONTENT_TYPE_FLAG | AG_BASIC_DELIVERY_MODE_FLAG | AG_BASIC_HEADERS_FLAG;
    h.u.basic.content_type = AG_LIT("text/plain");
    h.u.basic.delivery_mode = 2;
    ag_table_writer_finish(&w, &h.u.basic.headers);
    ag_bytes_t b = {(const uint8_t *)body, (size_t)snprintf(body, sizeof body, "message %d", i)};
    if ((rc = ag_client_publish(&client, 1, AG_LIT(""), q, &h, b, NULL)) != AG_OK)
      return die("publish", rc);
  }
  ag_basic_consume_t consume = {0};
  consume.queue = q;
  if ((rc = ag_client_basic_consume(&client, 1, &consume, NULL)) != AG_OK)
    return die("basic.consume", rc);
  for (int i = 0; i < 100; i++) {
    ag_event_t ev;
    ag_field_value_t index;
    if ((rc = ag_client_next(&client, &ev, 5000)) != AG_EV_MESSAGE)
      return die("receive", rc);
    if (ag_table_get(ev.header.u.basic.headers, AG_LIT("index"), &index) != 1 || index.v.i != i)
      return die("the index header", i);
    ag_basic_ack_t ack = {ev.method.u.basic_deliver.delivery_tag, false};
    if ((rc = ag_client_basic_ack(&client, 1, &ack, NULL)) != AG_OK)
      return die("basic.ack", rc);
  }
  if ((rc = ag_client_close(&client)) != AG_OK)
    return die("close", rc);
  printf("OK 100 messages published and read back with acks\n");
  return 0;
}
