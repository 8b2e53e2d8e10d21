// Seeded random mutation of the generated Java engine's input (package amqgen.rabbit, both roles; issue 34).
// Input: a file of streams in tests/engine_diff/README.md's text form (the recorded conversations of
// tests/engine_diff/streams.py), a line "%%" ending each; a stream whose first line is "server ..." runs an
// Engine.server(). Each case takes one stream, mutates the peer's octets (its recv lines: bits flipped, octets set to interesting values, 4-octet lengths set huge, octets inserted or
// deleted, the stream cut short there) and replays it into a fresh Engine, the caller's sends at their places,
// each recv cut in random pieces (arrays or ByteBuffers); a ProtocolError is answered with close() half the time,
// as a caller would. Required:
//   - only LocalProtocolException (and EncodeException: a frame over frame_max) escapes, only from the caller's
//     calls (initiate, send, publish, close), and a refused call writes nothing; receive, receiveEof, tick,
//     nextEvent, dataToSend throw nothing; a case never hangs (a watchdog);
//   - ConnectionLost is the last event, given once, and nothing is written after it;
//   - the octets out are the protocol header (a server: only when refusing the client's version), then whole
//     frames, each within the frame_max in force (the minimum until the tune-ok, sent by a client or accepted by
//     a server, then the tune-ok's; 0 is no limit).
// Usage: java EngineHostile STREAMFILE SEED CASES. Prints a summary; exit 1 with the failing case on failure.
// java EngineHostile STREAMFILE replay: each stream as it is, the same checks; prints each one's event kinds.
import amqgen.rabbit.ConnectionTuneOk;
import amqgen.rabbit.Constants;
import amqgen.rabbit.EncodeException;
import amqgen.rabbit.Engine;
import amqgen.rabbit.EngineEvent;
import amqgen.rabbit.LocalProtocolException;
import amqgen.rabbit.Method;
import amqgen.rabbit.MethodKind;
import amqgen.rabbit.Properties;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

public final class EngineHostile {
    private static final byte[] INTERESTING = {0, 1, 2, 3, 8, (byte) 0xCE, 0x7F, (byte) 0x80, (byte) 0xFF};
    private static final int[] HUGE = {0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0x00FFFFFF, 0x0000FFFF, 0x00001000};
    /** the case running and when it started: the watchdog's view */
    private static volatile long running = -1;
    private static volatile long startedAt;

    /** One step of a stream; recv's octets are what the mutations change. */
    record Step(String op, byte[] data, int channel, Method method, Properties props, long number, String text) {}

    static List<List<Step>> read(Path file) throws Exception {
        List<List<Step>> all = new ArrayList<>();
        List<Step> cur = new ArrayList<>();
        for (String line : Files.readAllLines(file)) {
            String[] w = line.trim().split(" ");
            switch (w[0]) {
                case "%%" -> {
                    all.add(cur);
                    cur = new ArrayList<>();
                }
                case "client", "" -> { }
                case "server" -> cur.add(new Step("server", null, 0, null, null, 0, null));
                case "initiate", "eof" -> cur.add(new Step(w[0], null, 0, null, null, 0, null));
                case "recv" -> cur.add(new Step("recv", StreamLines.unhex(w[1]), 0, null, null, 0, null));
                case "tick" -> cur.add(new Step("tick", null, 0, null, null, Long.parseLong(w[1]), null));
                case "send" -> cur.add(new Step("send", null, Integer.parseInt(w[1]), StreamLines.method(w[2]), null,
                        0, null));
                case "publish" -> cur.add(new Step("publish", StreamLines.unhex(w[4]), Integer.parseInt(w[1]),
                        StreamLines.method(w[2]), StreamLines.properties(w[3]), 0, null));
                case "close" -> cur.add(new Step("close", null, 0, null, null, Integer.parseInt(w[1]),
                        new String(w.length > 2 ? StreamLines.unhex(w[2]) : new byte[0], StandardCharsets.UTF_8)));
                default -> throw new IllegalArgumentException("bad stream line " + line);
            }
        }
        return all;
    }

    static byte[] mutateOnce(byte[] b, Random r) {
        int n = b.length;
        int at = n == 0 ? 0 : r.nextInt(n);
        switch (r.nextInt(6)) {
            case 0 -> {
                if (n > 0) {
                    b[at] ^= (byte) (1 << r.nextInt(8));
                }
            }
            case 1 -> {
                if (n > 0) {
                    b[at] = INTERESTING[r.nextInt(INTERESTING.length)];
                }
            }
            case 2 -> {
                if (n >= 4) {
                    int p = r.nextInt(n - 3);
                    int v = HUGE[r.nextInt(HUGE.length)];
                    b[p] = (byte) (v >>> 24);
                    b[p + 1] = (byte) (v >>> 16);
                    b[p + 2] = (byte) (v >>> 8);
                    b[p + 3] = (byte) v;
                }
            }
            case 3 -> {
                byte[] ins = new byte[1 + r.nextInt(8)];
                r.nextBytes(ins);
                byte[] out = new byte[n + ins.length];
                System.arraycopy(b, 0, out, 0, at);
                System.arraycopy(ins, 0, out, at, ins.length);
                System.arraycopy(b, at, out, at + ins.length, n - at);
                return out;
            }
            default -> {
                if (n > 0) {
                    int len = 1 + r.nextInt(Math.min(16, n - at));
                    byte[] out = new byte[n - len];
                    System.arraycopy(b, 0, out, 0, at);
                    System.arraycopy(b, at + len, out, at, n - at - len);
                    return out;
                }
            }
        }
        return b;
    }

    /** Where the handshake ends: a client's open sent (its answer is the next recv), a server's open-ok sent. */
    private static int openAt(List<Step> s) {
        for (int i = 0; i < s.size(); i++) {
            if (s.get(i).op().equals("send") && s.get(i).method().kind() == MethodKind.CONNECTION_OPEN) {
                return i;
            }
            if (s.get(i).op().equals("send") && s.get(i).method().kind() == MethodKind.CONNECTION_OPEN_OK) {
                return i;
            }
        }
        return s.size();
    }

    /** The stream with 1 to 4 changes to its recv lines, or cut short inside one (then the end of the stream). */
    static List<Step> mutate(List<Step> stream, Random r) {
        List<Step> s = new ArrayList<>(stream);
        List<Integer> recvs = new ArrayList<>();
        List<Integer> after = new ArrayList<>(); // past the handshake: after the recv that answers connection.open
        int open = openAt(s);
        boolean server = !s.isEmpty() && s.get(0).op().equals("server");
        boolean answered = false; // the open-ok's recv passed
        for (int i = 0; i < s.size(); i++) {
            if (s.get(i).op().equals("recv")) {
                recvs.add(i);
                if (server ? i > open : answered) { // a server's: every recv after its open-ok
                    after.add(i);
                }
                answered |= i > open;
            }
        }
        int rounds = 1 + r.nextInt(4);
        for (int k = 0; k < rounds; k++) {
            // mostly past the handshake, where the engine's behaviour is (the handshake's octets now and then)
            List<Integer> from = after.isEmpty() || r.nextInt(8) == 0 ? recvs : after;
            int i = from.get(r.nextInt(from.size()));
            if (i >= s.size() || !s.get(i).op().equals("recv")) {
                continue; // cut off by an earlier round
            }
            byte[] b = s.get(i).data().clone();
            if (r.nextInt(8) == 0) { // the stream ends inside this recv
                s.subList(i + 1, s.size()).clear();
                s.add(new Step("eof", null, 0, null, null, 0, null));
                b = Arrays.copyOf(b, b.length == 0 ? 0 : r.nextInt(b.length));
            } else {
                b = mutateOnce(b, r);
            }
            s.set(i, new Step("recv", b, 0, null, null, 0, null));
        }
        return s;
    }

    /** What the case checks as it runs. */
    static final class Run {
        Engine e = new Engine();
        boolean server;
        long frameMax = Constants.FRAME_MIN_SIZE;
        boolean headerSeen;
        boolean lost;
        boolean failed; // a ProtocolError not answered with close: nothing but ConnectionLost may follow
        boolean closing; // our close was accepted: nothing is read but the peer's close-ok or close
        int refused;
        int events;
        int protocolErrors;
        final List<String> kinds = new ArrayList<>();

        void fail(String why) {
            throw new AssertionError(why);
        }

        void drain(Random r) {
            for (EngineEvent ev = e.nextEvent(); ev != null; ev = e.nextEvent()) {
                events++;
                kinds.add(ev.getClass().getSimpleName());
                if (lost) {
                    fail("an event after ConnectionLost: " + ev);
                }
                if (failed && !(ev instanceof EngineEvent.ConnectionLost)) {
                    fail("an event after a ProtocolError the caller did not answer: " + ev);
                }
                if (ev instanceof EngineEvent.ConnectionLost) {
                    lost = true;
                } else if (ev instanceof EngineEvent.ProtocolError pe) {
                    // after our close only the peer's connection.close and close-ok are read (the rest is
                    // discarded, the spec's rule): one of those on a channel above 0 is the one error left
                    if (closing && !(pe.classId() == 10 && (pe.methodId() == 50 || pe.methodId() == 51))) {
                        fail("a ProtocolError after our connection.close (the peer's frames are discarded then): "
                                + pe);
                    }
                    protocolErrors++;
                    failed = true;
                    if (r.nextBoolean()) { // the caller's answer; the engine may refuse it only as documented
                        call(() -> close(pe.replyCode(), pe.replyText(), pe.classId(), pe.methodId()));
                    }
                } else if (ev instanceof EngineEvent.ConnectionClosed) {
                    closing = false;
                } else if (server && ev instanceof EngineEvent.MethodReceived m
                        && m.method() instanceof ConnectionTuneOk t) { // the client's tune-ok, accepted: in force
                    frameMax = t.frameMax();
                }
            }
            byte[] out = e.dataToSend();
            if (lost && out.length > 0) {
                fail(out.length + " octets to send after ConnectionLost");
            }
            int i = 0;
            if (!headerSeen && out.length > 0) {
                boolean header = out.length >= 8 && out[0] == 'A' && out[1] == 'M' && out[2] == 'Q' && out[3] == 'P';
                if (!header && !server) {
                    fail("the first octets out are not the protocol header");
                }
                headerSeen = true; // (a server's: its header refusing the client's version, or its first frame)
                i = header ? 8 : 0;
            }
            while (i < out.length) {
                if (out.length - i < 8) {
                    fail("a frame cut short in the octets out");
                }
                long size = ((out[i + 3] & 0xFFL) << 24) | ((out[i + 4] & 0xFF) << 16) | ((out[i + 5] & 0xFF) << 8)
                        | (out[i + 6] & 0xFF);
                if (frameMax != 0 && size + 8 > frameMax) {
                    fail("a frame of " + (size + 8) + " octets out, over frame_max " + frameMax);
                }
                if (size + 8 > out.length - i || out[(int) (i + 7 + size)] != (byte) 0xCE) {
                    fail("a malformed frame in the octets out");
                }
                i += (int) (size + 8);
            }
        }

        void close(int code, String text, int classId, int methodId) {
            e.close(code, text, classId, methodId);
            closing = true;
            failed = false;
        }

        void call(Runnable c) {
            int before = e.pending();
            try {
                c.run();
            } catch (LocalProtocolException | EncodeException x) {
                // the documented refusals (EncodeException: a frame over frame_max), with nothing written
                if (e.pending() != before) {
                    fail("a refused call wrote " + (e.pending() - before) + " octets: " + x);
                }
                refused++;
            }
        }

        void step(Step s, Random r) {
            switch (s.op()) {
                case "server" -> {
                    e = Engine.server();
                    server = true;
                }
                case "initiate" -> call(e::initiate);
                case "eof" -> e.receiveEof();
                case "tick" -> e.tick(s.number() * 1_000_000L);
                case "close" -> call(() -> close((int) s.number(), s.text(), 0, 0));
                case "send" -> call(() -> {
                    e.send(s.channel(), s.method());
                    if (s.method().kind() == MethodKind.CONNECTION_TUNE_OK) { // the caller's tune-ok is in force
                        frameMax = ((ConnectionTuneOk) s.method()).frameMax();
                    }
                });
                case "publish" -> call(() -> e.publish(s.channel(), s.method(), s.props(), s.data()));
                case "recv" -> {
                    byte[] b = s.data();
                    if (b.length == 0) {
                        e.receiveEof(); // a receive of 0 octets is the end of the stream
                    }
                    for (int i = 0; i < b.length; ) {
                        int n = Math.min(b.length - i, 1 + r.nextInt(r.nextBoolean() ? 16 : 8192));
                        if (r.nextInt(4) == 0) {
                            e.receive(ByteBuffer.allocateDirect(n).put(b, i, n).flip());
                        } else {
                            e.receive(b, i, n);
                        }
                        i += n;
                        if (r.nextInt(3) == 0) {
                            drain(r);
                        }
                    }
                }
                default -> fail("bad step " + s.op());
            }
            drain(r);
        }
    }

    static String describe(List<Step> s) {
        StringBuilder b = new StringBuilder();
        for (Step x : s) {
            b.append(x.op());
            if (x.op().equals("recv")) {
                b.append(' ').append(StreamLines.hex(x.data()));
            }
            b.append('\n');
        }
        return b.toString();
    }

    public static void main(String[] args) throws Exception {
        List<List<Step>> streams = read(Path.of(args[0]));
        if (args[1].equals("replay")) {
            for (List<Step> stream : streams) {
                Run run = new Run();
                Random r = new Random(0);
                try {
                    for (Step s : stream) {
                        run.step(s, r);
                    }
                } catch (Throwable t) {
                    System.out.println("FAIL " + t);
                    t.printStackTrace(System.out);
                    System.exit(1);
                }
                System.out.println(String.join(" ", run.kinds));
            }
            return;
        }
        long seed = Long.parseLong(args[1]);
        int cases = Integer.parseInt(args[2]);
        Thread watchdog = new Thread(() -> {
            while (true) {
                long c = running;
                if (c >= 0 && System.nanoTime() - startedAt > 20_000_000_000L) {
                    System.out.println("FAIL case " + c + " hangs (over 20 s)");
                    System.out.flush();
                    Runtime.getRuntime().halt(1);
                }
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException x) {
                    return;
                }
            }
        });
        watchdog.setDaemon(true);
        watchdog.start();
        Random master = new Random(seed);
        long began = System.nanoTime();
        long refused = 0;
        long events = 0;
        long errors = 0;
        long past = 0;
        for (int c = 0; c < cases; c++) {
            long caseSeed = master.nextLong();
            Random r = new Random(caseSeed);
            List<Step> stream = mutate(streams.get(r.nextInt(streams.size())), r);
            Run run = new Run();
            startedAt = System.nanoTime();
            running = c;
            try {
                for (Step s : stream) {
                    run.step(s, r);
                }
                if (!run.lost) {
                    run.fail("the stream ended without ConnectionLost");
                }
            } catch (Throwable t) {
                System.out.println("FAIL case " + c + " (case seed " + caseSeed + "): " + t);
                t.printStackTrace(System.out);
                System.out.println("stream:\n" + describe(stream));
                System.exit(1);
            }
            running = -1;
            refused += run.refused;
            events += run.events;
            errors += run.protocolErrors > 0 ? 1 : 0;
            past += run.kinds.contains("ConnectionNegotiated") ? 1 : 0;
        }
        long ms = (System.nanoTime() - began) / 1_000_000;
        System.out.println("OK " + cases + " mutated streams from " + streams.size() + " conversations (seed " + seed
                + ") in " + ms + " ms: " + past + " past the handshake, " + events + " events, " + errors + " streams with a ProtocolError, " + refused
                + " sends refused");
    }
}
