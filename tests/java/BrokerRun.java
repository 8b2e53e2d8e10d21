// A client written with nothing but the generated codec (package amqgen.rabbit) and java.net.Socket,
// against the RabbitMQ broker: handshake (PLAIN), tune to frame_max 4096, a channel, an exchange and a
// queue declared with argument tables, confirm.select, COUNT messages published with properties and
// header tables (every 10th body larger than frame_max, some empty), every one confirmed, then consumed
// back and acked, every body and property compared with what was sent, then a clean close.
// Usage: java BrokerRun HOST PORT USER PASSWORD PREFIX COUNT. Exit 0 when everything matched; a failure
// prints one line and exits 1 (no broker: "cannot connect").
import amqgen.rabbit.BasicAck;
import amqgen.rabbit.BasicConsume;
import amqgen.rabbit.BasicConsumeOk;
import amqgen.rabbit.BasicDeliver;
import amqgen.rabbit.BasicProperties;
import amqgen.rabbit.BasicPublish;
import amqgen.rabbit.Bytes;
import amqgen.rabbit.ChannelClose;
import amqgen.rabbit.ChannelCloseOk;
import amqgen.rabbit.ChannelOpen;
import amqgen.rabbit.ChannelOpenOk;
import amqgen.rabbit.ConfirmSelect;
import amqgen.rabbit.ConfirmSelectOk;
import amqgen.rabbit.ConnectionClose;
import amqgen.rabbit.ConnectionCloseOk;
import amqgen.rabbit.ConnectionOpen;
import amqgen.rabbit.ConnectionOpenOk;
import amqgen.rabbit.ConnectionStart;
import amqgen.rabbit.ConnectionStartOk;
import amqgen.rabbit.ConnectionTune;
import amqgen.rabbit.ConnectionTuneOk;
import amqgen.rabbit.Dialect;
import amqgen.rabbit.ExchangeDeclare;
import amqgen.rabbit.ExchangeDeclareOk;
import amqgen.rabbit.ExchangeDelete;
import amqgen.rabbit.Frame;
import amqgen.rabbit.FrameReader;
import amqgen.rabbit.FrameWriter;
import amqgen.rabbit.Method;
import amqgen.rabbit.QueueBind;
import amqgen.rabbit.QueueBindOk;
import amqgen.rabbit.QueueDeclare;
import amqgen.rabbit.QueueDeclareOk;
import amqgen.rabbit.ReplyException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

public final class BrokerRun {
    static final int FRAME_MAX = 4096;

    final Socket socket;
    final InputStream in;
    final OutputStream out;
    final FrameReader reader = new FrameReader(FRAME_MAX, Dialect.RABBITMQ);
    final FrameWriter writer = new FrameWriter(FRAME_MAX, Dialect.RABBITMQ);
    final ArrayDeque<Frame> frames = new ArrayDeque<>();
    final byte[] chunk = new byte[65536];

    BrokerRun(Socket socket) throws IOException {
        this.socket = socket;
        this.in = socket.getInputStream();
        this.out = socket.getOutputStream();
    }

    void flush() throws IOException {
        writer.writeTo(out);
        out.flush();
        writer.clear();
    }

    void send(int channel, Method m) throws IOException {
        writer.writeMethod(channel, m);
        flush();
    }

    Frame next() throws Exception {
        while (frames.isEmpty()) {
            int n = in.read(chunk);
            if (n < 0) {
                throw new IOException("the broker closed the connection");
            }
            frames.addAll(reader.feed(chunk, 0, n));
        }
        Frame f = frames.poll();
        if (f instanceof Frame.MethodFrame) {
            Method m = ((Frame.MethodFrame) f).method();
            if (m instanceof ConnectionClose) {
                ConnectionClose c = (ConnectionClose) m;
                throw ReplyException.of(c.replyCode(), c.replyText(), c.classId(), c.methodId(), false);
            }
            if (m instanceof ChannelClose) {
                ChannelClose c = (ChannelClose) m;
                throw ReplyException.of(c.replyCode(), c.replyText(), c.classId(), c.methodId(), true);
            }
        }
        return f;
    }

    <T extends Method> T expect(Class<T> type) throws Exception {
        Frame f = next();
        if (!(f instanceof Frame.MethodFrame) || !type.isInstance(((Frame.MethodFrame) f).method())) {
            throw new IllegalStateException("expected " + type.getSimpleName() + ", got " + f);
        }
        return type.cast(((Frame.MethodFrame) f).method());
    }

    static Map<String, Object> headers(int i) {
        Map<String, Object> level = new LinkedHashMap<>();
        level.put("i", i);
        level.put("arr", List.of(i, "x", Map.of("deep", true), List.of()));
        Map<String, Object> h = new LinkedHashMap<>();
        h.put("index", i);
        h.put("neg", -i - 1);
        h.put("big", (1L << 40) + i);
        h.put("text", "message " + i + " \u2713 \u6771\u4eac");
        h.put("flag", i % 2 == 0);
        h.put("nested", Map.of("level", level));
        h.put("array", Arrays.asList(1, "two", 3.5, null, new BigDecimal("-1.25")));
        h.put("dec", BigDecimal.valueOf(i, 2));
        h.put("when", Instant.ofEpochSecond(1735689600L + i));
        h.put("raw", Bytes.of((byte) (i % 256), (byte) 0, (byte) 255));
        h.put("float", i / 7.0);
        h.put("void", null);
        return h;
    }

    static BasicProperties properties(int i, String user) {
        return BasicProperties.builder()
                .contentType("application/octet-stream")
                .contentEncoding(i % 3 != 0 ? "identity" : null)
                .headers(headers(i))
                .deliveryMode(1 + i % 2)
                .priority(i % 10)
                .correlationId("corr-" + i)
                .replyTo(i % 5 == 0 ? "replies." + i : null)
                .expiration("600000")
                .messageId(String.format("msg-%04d", i))
                .timestamp(1700000000L + i)
                .type("amqgen.test")
                .userId(user)
                .appId("amqgen")
                .build();
    }

    static byte[] body(int i, Random r) {
        int size = i % 10 == 0 ? FRAME_MAX + r.nextInt(4 * FRAME_MAX + 1) : i % 37 == 0 ? 0 : 1 + r.nextInt(FRAME_MAX - 100);
        byte[] b = new byte[size];
        r.nextBytes(b);
        return b;
    }

    static boolean sameHeaders(Map<String, Object> want, Map<String, Object> got) {
        return want.equals(got);
    }

    public static void main(String[] args) throws Exception {
        String host = args[0];
        int port = Integer.parseInt(args[1]);
        String user = args[2];
        String password = args[3];
        String prefix = args[4];
        int count = Integer.parseInt(args[5]);
        Socket socket = new Socket();
        try {
            socket.connect(new InetSocketAddress(host, port), 5000);
        } catch (IOException e) {
            System.out.println("FAIL cannot connect to the broker at " + host + ":" + port + ": " + e);
            System.exit(1);
        }
        socket.setSoTimeout(30000);
        socket.setTcpNoDelay(true);
        try (socket) {
            new BrokerRun(socket).run(user, password, prefix, count);
        } catch (Exception e) {
            System.out.println("FAIL " + e);
            System.exit(1);
        }
    }

    void run(String user, String password, String prefix, int count) throws Exception {
        writer.writeProtocolHeader();
        flush();
        ConnectionStart start = expect(ConnectionStart.class);
        if (!new String(start.mechanisms().toByteArray(), StandardCharsets.UTF_8).contains("PLAIN")) {
            throw new IllegalStateException("no PLAIN mechanism: " + start);
        }
        Map<String, Object> client = new LinkedHashMap<>();
        client.put("product", "amqgen java test");
        client.put("capabilities", Map.of("publisher_confirms", true));
        send(0, new ConnectionStartOk(client, "PLAIN", Bytes.utf8("\0" + user + "\0" + password), "en_US"));
        ConnectionTune tune = expect(ConnectionTune.class);
        send(0, new ConnectionTuneOk(tune.channelMax(), FRAME_MAX, 0));
        send(0, new ConnectionOpen("/", "", false));
        expect(ConnectionOpenOk.class);
        send(1, new ChannelOpen(""));
        expect(ChannelOpenOk.class);
        String exchange = prefix + ".x";
        String queue = prefix + ".q";
        send(1, new ExchangeDeclare(0, exchange, "direct", false, false, true, false, false, Map.of("x-amqgen", "test")));
        expect(ExchangeDeclareOk.class);
        Map<String, Object> qargs = new LinkedHashMap<>();
        qargs.put("x-max-length", 100000);
        qargs.put("x-message-ttl", 600000L);
        send(1, new QueueDeclare(0, queue, false, false, true, false, false, qargs));
        QueueDeclareOk declared = expect(QueueDeclareOk.class);
        if (!declared.queue().equals(queue) || declared.messageCount() != 0) {
            throw new IllegalStateException("queue.declare-ok " + declared);
        }
        send(1, new QueueBind(0, queue, exchange, "rk", false, Map.of()));
        expect(QueueBindOk.class);
        send(1, new ConfirmSelect(false));
        expect(ConfirmSelectOk.class);

        Random r = new Random(20261123L);
        List<byte[]> bodies = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            byte[] body = body(i, r);
            bodies.add(body);
            writer.writeMessage(1, new BasicPublish(0, exchange, "rk", true, false), properties(i, user), body);
            if (writer.size() > 65536 || i == count - 1) {
                flush();
            }
        }
        long confirmed = 0;
        while (confirmed < count) {
            Frame f = next();
            Method m = f instanceof Frame.MethodFrame ? ((Frame.MethodFrame) f).method() : null;
            if (!(m instanceof BasicAck)) {
                throw new IllegalStateException("while waiting for confirms: " + f);
            }
            BasicAck ack = (BasicAck) m;
            if (ack.deliveryTag() <= confirmed || ack.deliveryTag() > count || (!ack.multiple() && ack.deliveryTag() != confirmed + 1)) {
                throw new IllegalStateException("confirm out of order: " + ack + " after " + confirmed);
            }
            confirmed = ack.deliveryTag();
        }

        send(1, new BasicConsume(0, queue, prefix + ".c", false, false, false, false, Map.of()));
        expect(BasicConsumeOk.class);
        for (int i = 0; i < count; i++) {
            BasicDeliver d = expect(BasicDeliver.class);
            if (!d.exchange().equals(exchange) || !d.routingKey().equals("rk") || d.redelivered()) {
                throw new IllegalStateException("message " + i + ": " + d);
            }
            Frame hf = next();
            if (!(hf instanceof Frame.HeaderFrame)) {
                throw new IllegalStateException("message " + i + ": expected a content header, got " + hf);
            }
            Frame.HeaderFrame h = (Frame.HeaderFrame) hf;
            BasicProperties want = properties(i, user);
            if (!want.equals(h.properties())) {
                throw new IllegalStateException("message " + i + ": properties differ:\n sent " + want + "\n  got " + h.properties());
            }
            ByteArrayOutputStream body = new ByteArrayOutputStream();
            while (body.size() < h.bodySize()) {
                Frame bf = next();
                if (!(bf instanceof Frame.BodyFrame)) {
                    throw new IllegalStateException("message " + i + ": expected a body frame, got " + bf);
                }
                ((Frame.BodyFrame) bf).payload().writeTo(body);  // no second copy of the payload
            }
            if (!Arrays.equals(bodies.get(i), body.toByteArray())) {
                throw new IllegalStateException("message " + i + ": body differs (" + body.size() + " of " + bodies.get(i).length + " octets)");
            }
            writer.writeMethod(1, new BasicAck(d.deliveryTag(), false));
            if (i % 50 == 49 || i == count - 1) {
                flush();
            }
        }
        send(1, new ExchangeDelete(0, exchange, false, false));
        expect(amqgen.rabbit.ExchangeDeleteOk.class);
        send(1, new ChannelClose(200, "bye", 0, 0));
        expect(ChannelCloseOk.class);
        send(0, new ConnectionClose(200, "bye", 0, 0));
        expect(ConnectionCloseOk.class);
        System.out.println("OK " + count + " messages published, confirmed, consumed, acked and compared; "
                + bodies.stream().filter(b -> b.length > FRAME_MAX - 8).count() + " bodies over frame_max");
    }
}
