// A minimal AMQP 0-9-1 server on the generated Java engine's server role (tests/amqp0/java/test_java_server.py), the Java
// twin of tests/c/engine_server.c: listens on 127.0.0.1 (port 0: the kernel's pick, printed as "port N"), takes
// one connection over a plain socket, logs in guest/guest (PLAIN), tunes frame_max 4096 and channel_max 8,
// answers channel.open and queue.declare, and prints what the client publishes (routing key, the "h2" header's
// value, the body in hex) and the closes. The engine does the rest: the handshake's order, the tune-ok's limits,
// frame_max both ways, the close handshakes, heartbeats (ticked once a second). Exit 0 after the client's close
// and the end of the stream; 1 on a protocol error, a refused call or anything unexpected; 1 after 60 s.
import amqgen.rabbit.BasicPublish;
import amqgen.rabbit.Bytes;
import amqgen.rabbit.ChannelOpen;
import amqgen.rabbit.ChannelOpenOk;
import amqgen.rabbit.ConnectionOpen;
import amqgen.rabbit.ConnectionOpenOk;
import amqgen.rabbit.ConnectionStart;
import amqgen.rabbit.ConnectionStartOk;
import amqgen.rabbit.ConnectionTune;
import amqgen.rabbit.ConnectionTuneOk;
import amqgen.rabbit.Engine;
import amqgen.rabbit.EngineEvent;
import amqgen.rabbit.Method;
import amqgen.rabbit.QueueDeclare;
import amqgen.rabbit.QueueDeclareOk;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Map;

public final class EngineServer {
    private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    private static final int FRAME_MAX = 4096;
    private static final int CHANNEL_MAX = 8;

    private final Engine engine = Engine.server();
    private boolean clean;

    private static void fail(String what) {
        OUT.println("FAIL " + what);
        System.exit(1);
    }

    private void call(int channel, Method m) {
        try {
            engine.send(channel, m);
        } catch (RuntimeException e) { // LocalProtocolException, EncodeException: this program's bug
            fail("send refused: " + e.getMessage());
        }
    }

    /** One event: the server's answer, or a line of the log; true when the connection is over. */
    private boolean onEvent(EngineEvent ev) {
        if (ev instanceof EngineEvent.ProtocolHeaderReceived) {
            call(0, new ConnectionStart(0, 9, Map.of("product", "amqgen Java engine server"), Bytes.utf8("PLAIN"),
                    Bytes.utf8("en_US")));
        } else if (ev instanceof EngineEvent.ConnectionNegotiated n) {
            OUT.println("negotiated " + n.frameMax() + " " + n.channelMax() + " " + n.heartbeat());
        } else if (ev instanceof EngineEvent.MethodReceived mr) {
            Method m = mr.method();
            if (m instanceof ConnectionStartOk s) {
                if (!"PLAIN".equals(s.mechanism()) || !s.response().toStringUtf8().equals("\0guest\0guest")) {
                    fail("login " + s.mechanism());
                }
                OUT.println("login guest");
                call(0, new ConnectionTune(CHANNEL_MAX, FRAME_MAX, 0));
            } else if (m instanceof ConnectionTuneOk) {
                return false; // the engine holds both sides to it
            } else if (m instanceof ConnectionOpen) {
                call(0, new ConnectionOpenOk());
            } else if (m instanceof ChannelOpen) {
                OUT.println("channel-open " + mr.channel());
                call(mr.channel(), new ChannelOpenOk());
            } else if (m instanceof QueueDeclare q) {
                OUT.println("declare " + q.queue());
                call(mr.channel(), new QueueDeclareOk(q.queue(), 0, 0));
            } else {
                OUT.println("method " + m.protocolName());
            }
        } else if (ev instanceof EngineEvent.MessageReceived msg) {
            Map<String, Object> headers = msg.properties() instanceof amqgen.rabbit.BasicProperties p
                    && p.headers() != null ? p.headers() : Map.of();
            OUT.println("publish " + ((BasicPublish) msg.method()).routingKey() + " h2=" + headers.get("h2")
                    + " body=" + HexFormat.of().formatHex(msg.body()));
        } else if (ev instanceof EngineEvent.ChannelClosed c) {
            OUT.println("channel-closed " + c.channel() + " " + c.replyCode());
        } else if (ev instanceof EngineEvent.ConnectionClosed c) {
            OUT.println("connection-closed " + c.replyCode());
        } else if (ev instanceof EngineEvent.ConnectionLost l) {
            OUT.println("lost " + (l.closed() ? 1 : 0) + " " + l.reason());
            clean = l.closed();
            return true;
        } else if (ev instanceof EngineEvent.ProtocolError pe) {
            OUT.println("protocol-error " + pe.replyCode() + " " + pe.replyText());
            engine.close(pe.replyCode(), pe.replyText(), pe.classId(), pe.methodId());
            return true;
        } else {
            OUT.println("event " + ev);
        }
        return false;
    }

    private int serve(Socket s) throws Exception {
        InputStream in = s.getInputStream();
        OutputStream out = s.getOutputStream();
        s.setSoTimeout(1000); // the read wakes once a second for the engine's heartbeats (tick)
        byte[] buf = new byte[1 << 16];
        long deadline = System.nanoTime() + 60_000_000_000L;
        for (;;) {
            if (System.nanoTime() > deadline) {
                fail("timeout");
            }
            int n;
            try {
                n = in.read(buf);
            } catch (SocketTimeoutException idle) {
                n = 0;
            }
            if (n < 0) {
                engine.receiveEof(); // the end of the stream, an input
            } else if (n > 0) {
                engine.receive(buf, 0, n);
            }
            engine.tick(System.nanoTime());
            boolean done = false;
            for (EngineEvent ev = engine.nextEvent(); ev != null; ev = engine.nextEvent()) {
                done |= onEvent(ev);
            }
            engine.writeTo(out);
            out.flush();
            if (done) {
                return clean ? 0 : 1;
            }
        }
    }

    public static void main(String[] args) throws Exception {
        int rc;
        try (ServerSocket ls = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            OUT.println("port " + ls.getLocalPort());
            ls.setSoTimeout(60_000);
            try (Socket s = ls.accept()) {
                rc = new EngineServer().serve(s);
            }
        }
        System.exit(rc);
    }
}
