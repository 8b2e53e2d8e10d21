/* The generated C client over TLS: an OpenSSL connection plugged in as the client's transport (ag_transport_t:
 * read with a timeout, write all), the server's certificate verified against CAFILE and its name checked against
 * HOST (also sent as SNI). Then the usual session: log in, declare an exclusive queue, publish 5 messages with
 * confirms, read them back with acks, close. Usage: tls CAFILE [HOST [PORT]] (localhost, 5671: RabbitMQ's TLS
 * port). Built with the tree of `amqgen render --lang c --option prefix=ag --out gen` and libssl: */
// cc -std=c99 -Igen/include -Igen/src -Igen/client gen/src/*.c gen/client/*.c tls.c -lssl -lcrypto -o tls
#define _POSIX_C_SOURCE 200809L
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "ag_client.h"

static ag_client_t client; /* large (its buffers): static, not on the stack */
static SSL_CTX *ssl_ctx;
static SSL *ssl;

static int finish(int status) {
  SSL_free(ssl); /* frees the socket BIO too, which closes the socket */
  SSL_CTX_free(ssl_ctx);
  return status;
}

/* The socket is non-blocking so a read can give up after timeout_ms (the client then ticks its heartbeats):
   OpenSSL says which way it waits (WANT_READ, or WANT_WRITE when a read must write first) and poll waits. */
static int wait_for(SSL *conn, int ret, int timeout_ms) {
  int err = SSL_get_error(conn, ret);
  if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE)
    return err == SSL_ERROR_ZERO_RETURN ? 0 : -1; /* 0: the peer's close_notify, the end of the stream */
  struct pollfd pf = {SSL_get_fd(conn), err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, 0};
  int ready = poll(&pf, 1, timeout_ms);
  return ready > 0 ? 1 : ready == 0 ? -2 : -1;
}

static long tls_read(void *conn, uint8_t *buf, size_t cap, int timeout_ms) {
  size_t n;
  int rc;
  while ((rc = SSL_read_ex(conn, buf, cap, &n)) != 1) /* a record not yet whole, a session ticket: wait */
    if ((rc = wait_for(conn, rc, timeout_ms)) != 1)
      return rc;
  return (long)n;
}

/* A write that makes no progress for timeout_ms gives up (-2): the client then counts the connection lost. */
static int tls_write(void *conn, const uint8_t *buf, size_t len, int timeout_ms) {
  size_t n;
  int rc;
  while ((rc = SSL_write_ex(conn, buf, len, &n)) != 1) /* all or nothing: retried with the same octets */
    if ((rc = wait_for(conn, rc, timeout_ms)) != 1)
      return rc == -2 ? -2 : -1;
  return 0;
}

static int die(const char *what, int rc) {
  fprintf(stderr, "tls: %s failed: %d (reply %u)\n", what, rc, client.last.reply_code);
  return finish(1);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: tls CAFILE [HOST [PORT]]\n");
    return 2;
  }
  const char *cafile = argv[1], *host = argc > 2 ? argv[2] : "localhost", *port = argc > 3 ? argv[3] : "5671";
  signal(SIGPIPE, SIG_IGN); /* a write to a closed socket fails (the client sees the end), not kills us */
  ssl_ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_min_proto_version(ssl_ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ssl_ctx, SSL_VERIFY_PEER, NULL); /* a certificate CAFILE does not vouch for fails the handshake */
  if (SSL_CTX_load_verify_locations(ssl_ctx, cafile, NULL) != 1) {
    fprintf(stderr, "tls: cannot load the CA file %s\n", cafile);
    return finish(1);
  }
  BIO *sock = BIO_new_connect(host);
  BIO_set_conn_port(sock, port);
  ssl = SSL_new(ssl_ctx);
  SSL_set_tlsext_host_name(ssl, host); /* SNI */
  SSL_set1_host(ssl, host);            /* the certificate must name host */
  SSL_set_bio(ssl, sock, sock);
  if (BIO_do_connect(sock) != 1 || SSL_connect(ssl) != 1) {
    long verify = SSL_get_verify_result(ssl); /* why the certificate was refused, if it was */
    const char *why = ERR_reason_error_string(ERR_peek_last_error());
    if (verify != X509_V_OK)
      fprintf(stderr, "tls: %s:%s: certificate verify failed: %s\n", host, port, X509_verify_cert_error_string(verify));
    else
      fprintf(stderr, "tls: %s:%s: cannot connect with TLS: %s\n", host, port, why ? why : "no reason given");
    return finish(1);
  }
  BIO_socket_nbio(SSL_get_fd(ssl), 1);
  printf("%s, certificate verified for %s\n", SSL_get_version(ssl), host);

  client.transport = (ag_transport_t){ssl, tls_read, tls_write}; /* ctx: what read and write get */
  ag_client_options_t options; /* guest/guest on "/"; the host and port are the transport's */
  ag_client_options_init(&options);
  options.heartbeat = 30;
  int rc;
  if ((rc = ag_client_start(&client, &options)) != AG_OK) /* close leaves the socket to SSL_free */
    return die("login", rc);
  ag_queue_declare_t declare = {0};
  declare.exclusive = true;
  ag_method_t reply;
  if ((rc = ag_client_queue_declare(&client, 1, &declare, &reply)) != AG_OK)
    return die("queue.declare", rc);
  char queue[256]; /* the reply lives until the next call: keep the name */
  ag_bytes_t name = reply.u.queue_declare_ok.queue;
  memcpy(queue, name.bytes, name.len);
  ag_bytes_t q = {(const uint8_t *)queue, name.len};
  ag_confirm_select_t select = {0};
  if ((rc = ag_client_confirm_select(&client, 1, &select, NULL)) != AG_OK)
    return die("confirm.select", rc);
  for (int i = 0; i < 5; i++) {
    char body[32];
    ag_bytes_t b = {(const uint8_t *)body, (size_t)snprintf(body, sizeof body, "secret %d", i)};
    if ((rc = ag_client_publish(&client, 1, AG_LIT(""), q, NULL, b, NULL)) != AG_OK)
      return die("publish", rc);
  }
  if ((rc = ag_client_wait_confirms(&client, 1)) != AG_OK)
    return die("confirms", rc);
  ag_basic_consume_t consume = {0};
  consume.queue = q;
  if ((rc = ag_client_basic_consume(&client, 1, &consume, NULL)) != AG_OK)
    return die("basic.consume", rc);
  for (int i = 0; i < 5; i++) {
    ag_event_t ev;
    if ((rc = ag_client_next(&client, &ev, 5000)) != AG_EV_MESSAGE)
      return die("receive", rc);
    printf("received %.*s\n", (int)ev.body.len, (const char *)ev.body.bytes);
    ag_basic_ack_t ack = {ev.method.u.basic_deliver.delivery_tag, false};
    if ((rc = ag_client_basic_ack(&client, 1, &ack, NULL)) != AG_OK)
      return die("basic.ack", rc);
  }
  if ((rc = ag_client_close(&client)) != AG_OK)
    return die("close", rc);
  SSL_shutdown(ssl); /* our close_notify; not waiting for the peer's */
  printf("OK 5 messages published with confirms over TLS and read back with acks\n");
  return finish(0);
}
