/* A basic.publish with properties and a 5000-octet body written as frames at frame_max 4096, then read back
   with the incremental reader in 1000-octet chunks. Built against the codec the CMake step generates (the
   default prefix, amqpc). */
#include <stdio.h>
#include <string.h>

#include "amqpc.h"

int main(void) {
  static uint8_t wire[16384], body[5000], storage[4096];
  amqpc_method_t m;
  amqpc_content_header_t h;
  amqpc_reader_t r;
  amqpc_frame_t f;
  size_t len = 0, got = 0;
  unsigned frames = 0;
  memset(&m, 0, sizeof m);
  memset(&h, 0, sizeof h);
  memset(body, 'b', sizeof body);
  m.id = AMQPC_BASIC_PUBLISH;
  m.u.basic_publish.routing_key.bytes = (const uint8_t *)"example";
  m.u.basic_publish.routing_key.len = 7;
  h.class_id = AMQPC_CLASS_BASIC;
  h.u.basic.flags = AMQPC_BASIC_CONTENT_TYPE_FLAG | AMQPC_BASIC_DELIVERY_MODE_FLAG;
  h.u.basic.content_type.bytes = (const uint8_t *)"text/plain";
  h.u.basic.content_type.len = 10;
  h.u.basic.delivery_mode = 2;
  if (amqpc_message_encode(1, &m, &h, body, sizeof body, 4096, wire, sizeof wire, &len) != AMQPC_OK)
    return 1;
  amqpc_reader_init(&r, storage, sizeof storage, 4096);
  for (size_t off = 0; off < len; off += 1000) {
    amqpc_reader_feed(&r, wire + off, len - off < 1000 ? len - off : 1000);
    int rc;
    while ((rc = amqpc_reader_next(&r, &f)) == AMQPC_OK) {
      frames++;
      if (f.type == AMQPC_FRAME_BODY)
        got += f.payload.len;
    }
    if (rc < 0) {
      printf("error: %s\n", amqpc_status_name(rc));
      return 1;
    }
  }
  printf("%u frames, %u octets, body %u octets\n", frames, (unsigned)len, (unsigned)got);
  return got == sizeof body ? 0 : 1;
}
