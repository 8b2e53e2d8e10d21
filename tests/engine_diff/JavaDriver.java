// The Java engine's driver for the differential test (README.md here): reads streams (the format there) on stdin,
// drives an Engine of package amqgen.rabbit in the role each stream's first line names and prints the canonical
// event log, as driver.c and pydriver.py print it. A line "%%" ends a stream (its log ends with "%%" too) and the
// next one gets a fresh engine: one JVM runs many streams. A line that does not parse is "bad-stream ..." and
// exit 2 (the harness's bug).
import amqgen.rabbit.DecodeException;
import amqgen.rabbit.EncodeException;
import amqgen.rabbit.Engine;
import amqgen.rabbit.EngineEvent;
import amqgen.rabbit.LocalProtocolException;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

public final class JavaDriver {
    private static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

    private static void bad(String what) {
        OUT.println("bad-stream " + what);
        OUT.flush();
        System.exit(2);
    }

    private static String event(EngineEvent ev) {
        if (ev instanceof EngineEvent.MethodReceived m) {
            return "ev method " + m.channel() + " " + StreamLines.hex(m.method().encode());
        } else if (ev instanceof EngineEvent.MessageReceived m) {
            return "ev message " + m.channel() + " " + StreamLines.hex(m.method().encode()) + " "
                    + StreamLines.hex(m.properties().encode()) + " " + StreamLines.hex(m.body());
        } else if (ev instanceof EngineEvent.MessageReturned m) {
            return "ev returned " + m.channel() + " " + StreamLines.hex(m.method().encode()) + " "
                    + StreamLines.hex(m.properties().encode()) + " " + StreamLines.hex(m.body());
        } else if (ev instanceof EngineEvent.ConnectionNegotiated n) {
            return "ev negotiated " + n.frameMax() + " " + n.channelMax() + " " + n.heartbeat();
        } else if (ev instanceof EngineEvent.ChannelOpened o) {
            return "ev opened " + o.channel();
        } else if (ev instanceof EngineEvent.ChannelClosed c) {
            return "ev channel-closed " + c.channel() + " " + c.replyCode();
        } else if (ev instanceof EngineEvent.ConnectionClosed c) {
            return "ev connection-closed " + c.replyCode();
        } else if (ev instanceof EngineEvent.PublishAcked a) { // the highest tag settled, as the C event carries it
            return "ev acked " + a.channel() + " " + a.deliveryTags().get(a.deliveryTags().size() - 1);
        } else if (ev instanceof EngineEvent.PublishNacked a) {
            return "ev nacked " + a.channel() + " " + a.deliveryTags().get(a.deliveryTags().size() - 1);
        } else if (ev instanceof EngineEvent.PeerSilent) {
            return "ev silent";
        } else if (ev instanceof EngineEvent.ProtocolHeaderReceived) {
            return "ev protocol-header";
        } else if (ev instanceof EngineEvent.ProtocolError pe) {
            return "ev protocol-error " + pe.replyCode();
        } else if (ev instanceof EngineEvent.ConnectionLost l) {
            return "ev lost " + (l.closed() ? 1 : 0) + " " + l.reason();
        } else if (ev instanceof EngineEvent.PublishesUnconfirmed u) { // runs of consecutive tags, as C gives them
            StringBuilder b = new StringBuilder();
            List<Long> tags = u.deliveryTags();
            for (int i = 0; i < tags.size(); ) {
                int j = i;
                while (j + 1 < tags.size() && tags.get(j + 1) == tags.get(j) + 1) {
                    j++;
                }
                b.append(b.length() > 0 ? "\n" : "").append("ev unconfirmed ").append(u.channel()).append(' ')
                        .append(tags.get(i)).append(' ').append(tags.get(j));
                i = j + 1;
            }
            return b.toString();
        } else if (ev instanceof EngineEvent.HeartbeatDue) {
            return null; // left out of the log (README): the heartbeat is in the bytes out
        }
        return "ev unknown " + ev.getClass().getSimpleName();
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 20);
        Engine e = null;
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            String[] w = line.trim().split(" ");
            if (w[0].isEmpty() || w[0].startsWith("#")) {
                continue;
            }
            if (e == null) {
                if (w.length != 4 || !"client".equals(w[0]) && !"server".equals(w[0])) {
                    bad("first line " + line);
                }
                // the wanted limits are those of the tune-ok (a client) or the tune (a server) the stream sends:
                // nothing to configure
                e = "server".equals(w[0]) ? Engine.server() : new Engine();
                continue;
            }
            if ("%%".equals(w[0])) {
                OUT.println("%%");
                OUT.flush(); // a caller feeding one stream at a time reads its log now
                e = null;
                continue;
            }
            OUT.println("> " + w[0]);
            try {
                switch (w[0]) {
                    case "initiate" -> e.initiate();
                    case "recv" -> {
                        byte[] b = StreamLines.unhex(w[1]);
                        if (b.length == 0) {
                            e.receiveEof(); // a receive of 0 octets is the end of the stream, as in C and Python
                        } else {
                            e.receive(b, 0, b.length);
                        }
                    }
                    case "eof" -> e.receiveEof();
                    case "tick" -> e.tick(Long.parseLong(w[1]) * 1_000_000L);
                    case "send" -> e.send(Integer.parseInt(w[1]), StreamLines.method(w[2]));
                    case "publish" -> e.publish(Integer.parseInt(w[1]), StreamLines.method(w[2]),
                            StreamLines.properties(w[3]), StreamLines.unhex(w[4]));
                    case "close" -> e.close(Integer.parseInt(w[1]),
                            w.length > 2 ? new String(StreamLines.unhex(w[2]), StandardCharsets.UTF_8) : "", 0, 0);
                    default -> bad(w[0]);
                }
            } catch (LocalProtocolException | EncodeException x) {
                OUT.println("refused"); // refused with nothing written (what the engine's Javadoc promises)
            } catch (DecodeException | ArrayIndexOutOfBoundsException | IllegalArgumentException x) {
                bad(line);
            }
            List<String> events = new ArrayList<>();
            for (EngineEvent ev = e.nextEvent(); ev != null; ev = e.nextEvent()) {
                String text = event(ev);
                if (text != null) {
                    events.addAll(List.of(text.split("\n")));
                }
            }
            // each block of unconfirmed runs in channel order (pydriver's by_channel: the engines walk their
            // channels in different orders at the connection's end); a channel's runs keep their order
            for (int i = 0; i < events.size(); ) {
                int j = i;
                while (j < events.size() && events.get(j).startsWith("ev unconfirmed ")) {
                    j++;
                }
                if (j > i) {
                    List<String> block = new ArrayList<>(events.subList(i, j));
                    block.sort(Comparator.comparingInt(x -> Integer.parseInt(x.split(" ")[2])));
                    block.forEach(OUT::println);
                    i = j;
                } else {
                    OUT.println(events.get(i++));
                }
            }
            byte[] out = e.dataToSend();
            if (out.length > 0) {
                OUT.println("out " + StreamLines.hex(out));
            }
        }
        OUT.flush();
    }
}
