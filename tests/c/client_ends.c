/* The blocking client (ag_client.h) over a scripted transport: each read returns the next server frame, written
 * octet by octet here (not by the library's encoders); writes are kept. Checks what the client does when a
 * confirming channel ends with publishes unconfirmed:
 *  - wait_confirms after 3 publishes, the server acks 1 then closes the channel (406): wait_confirms returns
 *    AG_CLIENT_CHANNEL_CLOSED with last the close (406), and client_next then gives the publishes left
 *    unconfirmed (2..3) and nothing more;
 *  - channel 1 reopened, confirming, 1 publish, then queue.declare answered by a channel.close (404): the call
 *    returns AG_CLIENT_CHANNEL_CLOSED (the unconfirmed event is not taken for the reply), client_next gives 1..1;
 *  - the client's close answered by close-ok; the octets written end with connection.close.
 * Prints "OK ..." or "FAIL ..." (exit 1). */
#include "ag_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t script[16][128];
static size_t script_len[16], steps, next_step;
static uint8_t written[1 << 16];
static size_t written_len;
static unsigned ends_seen;
static char ends_text[256];

static void fail(const char *what) {
  printf("FAIL %s\n", what);
  exit(1);
}

/* a frame: type, channel, size, payload, frame-end */
static uint8_t *frame;
static size_t flen;
static void put(const void *p, size_t n) {
  memcpy(frame + flen, p, n);
  flen += n;
}
static void u8(unsigned v) {
  uint8_t b = (uint8_t)v;
  put(&b, 1);
}
static void u16(unsigned v) {
  u8(v >> 8);
  u8(v);
}
static void u32(unsigned long v) {
  u16((unsigned)(v >> 16));
  u16((unsigned)(v & 0xFFFF));
}
static void begin(unsigned channel, unsigned class_id, unsigned method_id) {
  frame = script[steps];
  flen = 0;
  u8(1);
  u16(channel);
  u32(0); /* the size, set in end() */
  u16(class_id);
  u16(method_id);
}
static void end(void) {
  size_t size = flen - 7;
  frame[3] = (uint8_t)(size >> 24);
  frame[4] = (uint8_t)(size >> 16);
  frame[5] = (uint8_t)(size >> 8);
  frame[6] = (uint8_t)size;
  u8(0xCE);
  script_len[steps++] = flen;
}

static long script_read(void *ctx, uint8_t *buf, size_t cap, int timeout_ms) {
  (void)ctx;
  (void)timeout_ms;
  if (next_step == steps)
    return 0; /* the end of the stream */
  if (script_len[next_step] > cap)
    fail("read buffer");
  memcpy(buf, script[next_step], script_len[next_step]);
  return (long)script_len[next_step++];
}

static int script_write(void *ctx, const uint8_t *buf, size_t len, int timeout_ms) {
  (void)ctx;
  (void)timeout_ms;
  if (written_len + len > sizeof written)
    fail("written");
  memcpy(written + written_len, buf, len);
  written_len += len;
  return 0;
}

static ag_client_t client;

/* the events client_next has now (without reading: the script's next read is the next reply): the publishes
   left unconfirmed, written down; anything else fails */
static void unconfirmed(void) {
  ag_event_t ev;
  int rc;
  while ((rc = ag_client_next(&client, &ev, 0)) == AG_EV_PUBLISHES_UNCONFIRMED) {
    size_t n = strlen(ends_text);
    snprintf(ends_text + n, sizeof ends_text - n, "%s%u:%llu..%llu", n ? " " : "", ev.channel,
             (unsigned long long)ev.first_tag, (unsigned long long)ev.delivery_tag);
    ends_seen++;
  }
  if (rc != AG_CLIENT_TIMEOUT)
    fail("client_next gave something else than the unconfirmed publishes");
}

int main(void) {
  begin(0, 10, 10); /* connection.start 0-9, no server properties, PLAIN, en_US */
  u8(0);
  u8(9);
  u32(0);
  u32(5);
  put("PLAIN", 5);
  u32(5);
  put("en_US", 5);
  end();
  begin(0, 10, 30); /* connection.tune 2047, 131072, 0 */
  u16(2047);
  u32(131072);
  u16(0);
  end();
  begin(0, 10, 41); /* connection.open-ok */
  u8(0);
  end();
  begin(1, 20, 11); /* channel.open-ok */
  u32(0);
  end();
  begin(1, 85, 11); /* confirm.select-ok */
  end();
  begin(1, 60, 80); /* basic.ack 1 */
  u32(0);
  u32(1);
  u8(0);
  end();
  begin(1, 20, 40); /* channel.close 406 */
  u16(406);
  u8(19);
  put("PRECONDITION_FAILED", 19);
  u16(60);
  u16(40);
  end();
  begin(1, 20, 11); /* channel.open-ok */
  u32(0);
  end();
  begin(1, 85, 11); /* confirm.select-ok */
  end();
  begin(1, 20, 40); /* channel.close 404 */
  u16(404);
  u8(9);
  put("NOT_FOUND", 9);
  u16(50);
  u16(10);
  end();
  begin(0, 10, 51); /* connection.close-ok */
  end();

  client.transport.read = script_read;
  client.transport.write = script_write;
  ag_client_options_t options;
  ag_client_options_init(&options);
  options.heartbeat = 0;
  if (ag_client_start(&client, &options) != AG_OK)
    fail("start");
  ag_confirm_select_t cs;
  memset(&cs, 0, sizeof cs);
  if (ag_client_confirm_select(&client, 1, &cs, NULL) != AG_OK)
    fail("confirm.select");
  uint8_t body[3] = {1, 2, 3};
  for (int i = 0; i < 3; i++)
    if (ag_client_publish(&client, 1, AG_LIT(""), AG_LIT("q"), NULL, (ag_bytes_t){body, 3}, NULL) != AG_OK)
      fail("publish");
  int rc = ag_client_wait_confirms(&client, 1);
  if (rc != AG_CLIENT_CHANNEL_CLOSED || client.last.type != AG_EV_CHANNEL_CLOSED || client.last.reply_code != 406)
    fail("wait_confirms did not end with the channel's close 406");
  unconfirmed();
  if (strcmp(ends_text, "1:2..3") != 0)
    fail("the publishes left unconfirmed were not 2..3 on channel 1");

  ag_channel_open_t co;
  memset(&co, 0, sizeof co);
  if (ag_client_channel_open(&client, 1, &co, NULL) != AG_OK ||
      ag_client_confirm_select(&client, 1, &cs, NULL) != AG_OK)
    fail("channel 1 reopened, confirm.select");
  if (ag_client_publish(&client, 1, AG_LIT(""), AG_LIT("q"), NULL, (ag_bytes_t){body, 3}, NULL) != AG_OK)
    fail("publish after the reopen");
  ag_queue_declare_t qd;
  memset(&qd, 0, sizeof qd);
  qd.queue = AG_LIT("nope");
  qd.passive = true;
  rc = ag_client_queue_declare(&client, 1, &qd, NULL);
  if (rc != AG_CLIENT_CHANNEL_CLOSED || client.last.type != AG_EV_CHANNEL_CLOSED || client.last.reply_code != 404)
    fail("queue.declare answered by a close did not return AG_CLIENT_CHANNEL_CLOSED with the close 404");
  unconfirmed();
  if (strcmp(ends_text, "1:2..3 1:1..1") != 0)
    fail("the publish left unconfirmed by the 404 was not 1..1 on channel 1");

  if (ag_client_close(&client) != AG_OK)
    fail("close");
  /* the last octets written: connection.close (10, 50) 200 "bye" 0 0 */
  static const uint8_t close_frame[] = {1, 0,    0, 0,   0,   0,   14, 0, 10, 0, 50,
                                        0, 0xC8, 3, 'b', 'y', 'e', 0,  0, 0,  0, 0xCE};
  if (written_len < sizeof close_frame ||
      memcmp(written + written_len - sizeof close_frame, close_frame, sizeof close_frame) != 0)
    fail("the last frame written is not connection.close 200 bye");
  printf("OK wait_confirms and a call end with the channel's close, unconfirmed %s\n", ends_text);
  return 0;
}
