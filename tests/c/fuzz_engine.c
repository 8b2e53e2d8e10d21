/* libFuzzer on the engine's receive path, client role, past the handshake. The handshake is done here (a
 * server's start, tune 4/4096/heartbeat, open-ok), then the input is a stream of steps, the caller's and the
 * server's, as tests/engine_diff's streams have them (tests/c/engine_seeds.py writes those conversations in
 * this form: the seeds):
 *
 *   octet 0: the heartbeat tuned (its value % 3, seconds)
 *   then steps, each an opcode octet (its value % 6) and its operands (lengths big-endian, cut at the end):
 *     0 recv    len16 octets                           the server's octets (read in place)
 *     1 send    ch8 len16 method-payload               the caller sends a method (one that does not decode
 *                                                      is skipped: the caller's methods are typed)
 *     2 publish ch8 len16 method len16 header len16 body
 *     3 tick    ms16                                   time passes by that much
 *     4 close   code16 len8 text                       the caller closes the connection
 *     5 eof                                            the end of the stream
 *
 * After every step each event is drained and the octets out are checked: whole frames, each within the
 * frame_max agreed. No event may follow the connection's end; a protocol error is answered with a close, as a
 * caller must; after our close no protocol error comes but for a close or close-ok on a channel above 0. At
 * the end the stream ends: the engine must be lost with nothing left to report. ASan/UBSan report memory and
 * arithmetic errors. Build: clang -fsanitize=fuzzer,address,undefined with the library. */
#include "fuzz_engine_steps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static ag_engine_t e;
  uint16_t hb = size ? data[0] % 3 : 1;
  ag_engine_config_t cfg = {4096, 4, hb, in, sizeof in, out, sizeof out, msg, sizeof msg, AG_ROLE_CLIENT};
  ag_method_t m, t;
  size_t len, at = 1;
  lost = closing = 0;
  CHECK(ag_engine_init(&e, &cfg) == AG_OK && ag_engine_initiate(&e) == AG_OK);
  m = mk(AG_CONNECTION_START);
  m.u.connection_start.version_major = 0;
  m.u.connection_start.version_minor = 9;
  m.u.connection_start.mechanisms = AG_LIT("PLAIN");
  m.u.connection_start.locales = AG_LIT("en_US");
  feed_method(&e, 0, &m);
  m = mk(AG_CONNECTION_START_OK);
  m.u.connection_start_ok.mechanism = AG_LIT("PLAIN");
  CHECK(ag_engine_send_method(&e, 0, &m) == AG_OK);
  m = mk(AG_CONNECTION_TUNE);
  m.u.connection_tune.channel_max = 4;
  m.u.connection_tune.frame_max = 131072;
  m.u.connection_tune.heartbeat = hb;
  feed_method(&e, 0, &m);
  ag_engine_tune_ok(&e, &m, &t);
  CHECK(ag_engine_send_method(&e, 0, &t) == AG_OK);
  CHECK(ag_engine_send_method(&e, 0, (m = mk(AG_CONNECTION_OPEN), &m)) == AG_OK);
  feed_method(&e, 0, (m = mk(AG_CONNECTION_OPEN_OK), &m));
  CHECK(e.state == 2 && e.frame_max == 4096);
  (void)ag_engine_data_to_send(&e, &len);
  return run_steps(&e, data, size, at);
}
