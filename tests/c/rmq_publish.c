/* librabbitmq's client against tests/c/engine_server.c (tests/amqp0/c/test_c_server.py): logs in (guest/guest, frame_max
 * 131072 asked: the server's tune of 4096 wins), opens channel 1, declares a queue, publishes a 6,000-octet
 * body (two body frames at 4096) with a content type and an "h2" header on channel 1 in confirm mode, then a
 * second one of 5 octets, each followed by the server's basic.ack read here ("ack <tag>": 1, then 2), closes the
 * channel and the connection. argv: host port. Exit 0 when every reply came; 1 and a line otherwise. */
#include <amqp.h>
#include <amqp_tcp_socket.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(amqp_rpc_reply_t r, const char *what) {
  if (r.reply_type != AMQP_RESPONSE_NORMAL) {
    printf("FAIL %s (reply type %d)\n", what, (int)r.reply_type);
    exit(1);
  }
}

int main(int argc, char **argv) {
  if (argc != 3)
    return 2;
  amqp_connection_state_t conn = amqp_new_connection();
  amqp_socket_t *sock = amqp_tcp_socket_new(conn);
  if (sock == NULL || amqp_socket_open(sock, argv[1], atoi(argv[2])) != AMQP_STATUS_OK) {
    printf("FAIL connect\n");
    return 1;
  }
  check(amqp_login(conn, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, "guest", "guest"), "login");
  printf("frame_max %d\n", amqp_get_frame_max(conn));
  amqp_channel_open(conn, 1);
  check(amqp_get_rpc_reply(conn), "channel.open");
  amqp_queue_declare_ok_t *ok =
      amqp_queue_declare(conn, 1, amqp_cstring_bytes("h2-server-q"), 0, 0, 1, 1, amqp_empty_table);
  check(amqp_get_rpc_reply(conn), "queue.declare");
  printf("declare-ok %.*s\n", (int)ok->queue.len, (const char *)ok->queue.bytes);
  amqp_confirm_select(conn, 1);
  check(amqp_get_rpc_reply(conn), "confirm.select");
  static char body[6000];
  for (size_t i = 0; i < sizeof body; i++)
    body[i] = (char)(i % 251);
  amqp_table_entry_t h;
  h.key = amqp_cstring_bytes("h2");
  h.value.kind = AMQP_FIELD_KIND_UTF8;
  h.value.value.bytes = amqp_cstring_bytes("from-librabbitmq");
  amqp_basic_properties_t p;
  memset(&p, 0, sizeof p);
  p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_HEADERS_FLAG;
  p.content_type = amqp_cstring_bytes("application/octet-stream");
  p.headers.num_entries = 1;
  p.headers.entries = &h;
  for (int i = 0; i < 2; i++) {
    amqp_bytes_t b = {i == 0 ? sizeof body : 5, body};
    if (amqp_basic_publish(conn, 1, amqp_empty_bytes, amqp_cstring_bytes("h2-server-q"), 0, 0, &p, b) !=
        AMQP_STATUS_OK) {
      printf("FAIL publish\n");
      return 1;
    }
    amqp_frame_t f; /* the confirm: the server's basic.ack, whose tag librabbitmq decodes */
    if (amqp_simple_wait_frame(conn, &f) != AMQP_STATUS_OK || f.frame_type != AMQP_FRAME_METHOD ||
        f.channel != 1 || f.payload.method.id != AMQP_BASIC_ACK_METHOD) {
      printf("FAIL no basic.ack\n");
      return 1;
    }
    const amqp_basic_ack_t *ack = f.payload.method.decoded;
    printf("ack %llu%s\n", (unsigned long long)ack->delivery_tag, ack->multiple ? " multiple" : "");
  }
  check(amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS), "channel.close");
  check(amqp_connection_close(conn, AMQP_REPLY_SUCCESS), "connection.close");
  amqp_destroy_connection(conn);
  printf("closed\n");
  return 0;
}
