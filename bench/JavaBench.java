// The generated Java codec (package amqgen.rabbit, from RabbitMQ's 0-9-1 extended spec) against the
// RabbitMQ Java client 5.0's own codec (AMQImpl, Frame, AMQP.BasicProperties, its table reader and writer),
// on the five cases of the Python and C benches, each side through its own API to and from wire bytes:
//   1 encode basic.publish + content header (content-type, delivery-mode, 3-entry headers table,
//     message-id, timestamp) + 128-octet body, as complete frames
//   2 decode those three frames (frame reader + method, properties and table decoders)
//   3 decode basic.deliver + content header + 1 KiB body
//   4 decode a RabbitMQ-like connection.start (server-properties with a nested capabilities table)
//   5 encode and decode queue.declare with a 5-entry arguments table
// Before timing, both sides are checked to write the same octets (cases 1 and 5) and to decode the same
// values (cases 2 to 5). Then, in one JVM: a warm-up, and REPEATS timed rounds per case alternating the
// two sides; the figure is the median round in operations per second.
// Usage: java JavaBench [REPEATS [ROUND_MS]]; prints "case|name|ours|client" lines, then "checksum N".
import amqgen.rabbit.BasicDeliver;
import amqgen.rabbit.BasicProperties;
import amqgen.rabbit.BasicPublish;
import amqgen.rabbit.Bytes;
import amqgen.rabbit.ConnectionStart;
import amqgen.rabbit.Dialect;
import amqgen.rabbit.Frame;
import amqgen.rabbit.FrameReader;
import amqgen.rabbit.FrameWriter;
import amqgen.rabbit.QueueDeclare;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.LongString;
import com.rabbitmq.client.impl.AMQContentHeader;
import com.rabbitmq.client.impl.AMQImpl;
import com.rabbitmq.client.impl.LongStringHelper;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

public final class JavaBench {
    static final String EXCHANGE = "bench.exchange";
    static final String ROUTING_KEY = "bench.orders.created";
    static final String CONTENT_TYPE = "application/json";
    static final String MESSAGE_ID = "b7e3a0c4-2f1d-4c61-9a55-0d3f3b2c1e9a";
    static final long TIMESTAMP = 1_700_000_000L;
    static final String CONSUMER_TAG = "amq.ctag-Xq0vZbF3nQ1mYk8T2sJ4uA";
    static final long DELIVERY_TAG = 123_456L;
    static final String QUEUE = "bench.queue.orders";
    static final byte[] BODY_128 = new byte[128];
    static final byte[] BODY_1K = new byte[1024];
    static final int FRAME_MAX = 131072;

    static {
        for (int i = 0; i < BODY_128.length; i++) {
            BODY_128[i] = (byte) i;
        }
        for (int i = 0; i < BODY_1K.length; i++) {
            BODY_1K[i] = (byte) (i * 7);
        }
    }

    /** Tables in the order the client keeps them (it copies them into HashMaps), so the octets agree. */
    static Map<String, Object> headers;
    static Map<String, Object> queueArgs;
    static Map<String, Object> serverProperties;

    static Map<String, Object> ordered(Map<String, Object> clientOrder) {
        return Collections.unmodifiableMap(new LinkedHashMap<>(clientOrder));
    }

    static Map<String, Object> rawHeaders() {
        Map<String, Object> h = new LinkedHashMap<>();
        h.put("source", "bench-suite");
        h.put("trace-id", "5f0c1e2a9b7d4e3f");
        h.put("urgent", true);
        return h;
    }

    static Map<String, Object> rawQueueArgs() {
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("x-dead-letter-exchange", "bench.dlx");
        a.put("x-max-length", 100_000);
        a.put("x-max-length-bytes", 1_073_741_824);
        a.put("x-message-ttl", 3_600_000);
        a.put("x-queue-type", "classic");
        return a;
    }

    static Map<String, Object> rawServerProperties() {
        Map<String, Object> caps = new LinkedHashMap<>();
        for (String c : new String[] {"publisher_confirms", "exchange_exchange_bindings", "basic.nack", "consumer_cancel_notify",
            "connection.blocked", "consumer_priorities", "authentication_failure_close", "per_consumer_qos", "direct_reply_to"}) {
            caps.put(c, true);
        }
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("capabilities", caps);
        p.put("cluster_name", "rabbit@bench-host");
        p.put("copyright", "Copyright (c) 2007-2024 Broadcom Inc and/or its subsidiaries");
        p.put("information", "Licensed under the MPL 2.0. Website: https://rabbitmq.com");
        p.put("platform", "Erlang/OTP 26.2.5");
        p.put("product", "RabbitMQ");
        p.put("version", "3.13.7");
        return p;
    }

    // -- the two sides' operations ----------------------------------------------------------------------
    interface Op {
        long run() throws Exception;
    }

    static final FrameWriter OUT = new FrameWriter(FRAME_MAX, Dialect.RABBITMQ);
    static final ByteArrayOutputStream BOS = new ByteArrayOutputStream(4096);
    static final DataOutputStream DOS = new DataOutputStream(BOS);

    static long oursEncodePublish() {
        BasicProperties props = BasicProperties.builder().contentType(CONTENT_TYPE).deliveryMode(2).headers(headers)
                .messageId(MESSAGE_ID).timestamp(TIMESTAMP).build();
        OUT.clear().writeMessage(1, new BasicPublish(0, EXCHANGE, ROUTING_KEY, false, false), props, BODY_128);
        return OUT.size();
    }

    static long clientEncodePublish() throws IOException {
        AMQP.BasicProperties props = new AMQP.BasicProperties.Builder().contentType(CONTENT_TYPE).deliveryMode(2)
                .headers(headers).messageId(MESSAGE_ID).timestamp(new Date(TIMESTAMP * 1000)).build();
        BOS.reset();
        new AMQImpl.Basic.Publish(0, EXCHANGE, ROUTING_KEY, false, false).toFrame(1).writeTo(DOS);
        props.toFrame(1, BODY_128.length).writeTo(DOS);
        com.rabbitmq.client.impl.Frame.fromBodyFragment(1, BODY_128, 0, BODY_128.length).writeTo(DOS);
        DOS.flush();
        return BOS.size();
    }

    static final FrameReader READER = new FrameReader(FRAME_MAX, Dialect.RABBITMQ);

    static List<Frame> oursDecode(byte[] wire) throws Exception {
        return READER.feed(wire, 0, wire.length);
    }

    /** The client reads frames the way its connection does: Frame.readFrom, then AMQImpl / the payload. */
    static List<Object> clientDecode(byte[] wire) throws IOException {
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(wire));
        List<Object> out = new ArrayList<>(3);
        while (in.available() > 0) {
            com.rabbitmq.client.impl.Frame f = com.rabbitmq.client.impl.Frame.readFrom(in);
            if (f.type == 1) {
                out.add(AMQImpl.readMethodFrom(f.getInputStream()));
            } else if (f.type == 2) {
                out.add(AMQImpl.readContentHeaderFrom(f.getInputStream()));
            } else {
                out.add(f.getPayload());
            }
        }
        return out;
    }

    static long oursQueueDeclare() throws Exception {
        OUT.clear().writeMethod(1, new QueueDeclare(0, QUEUE, false, true, false, false, false, queueArgs));
        return READER.feed(OUT.array(), 0, OUT.size()).size();
    }

    static long clientQueueDeclare() throws IOException {
        BOS.reset();
        new AMQImpl.Queue.Declare(0, QUEUE, false, true, false, false, false, queueArgs).toFrame(1).writeTo(DOS);
        DOS.flush();
        return clientDecode(BOS.toByteArray()).size();
    }

    // -- checks: the same octets, the same values ----------------------------------------------------------
    static void require(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException("bench check failed: " + what);
        }
    }

    static Object norm(Object v) {
        if (v instanceof LongString) {
            return new String(((LongString) v).getBytes(), StandardCharsets.UTF_8);
        }
        if (v instanceof Map) {
            Map<String, Object> out = new TreeMap<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                out.put((String) e.getKey(), norm(e.getValue()));
            }
            return out;
        }
        return v;
    }

    static byte[] clientBytes(com.rabbitmq.client.impl.Method m, int channel) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        m.toFrame(channel).writeTo(new DataOutputStream(b));
        return b.toByteArray();
    }

    static void checkPublishDecode(List<Frame> ours, List<Object> theirs, byte[] body) {
        require(ours.size() == 3 && theirs.size() == 3, "three frames");
        require(((Frame.MethodFrame) ours.get(0)).method() instanceof BasicPublish || ((Frame.MethodFrame) ours.get(0)).method() instanceof BasicDeliver, "method");
        Frame.HeaderFrame h = (Frame.HeaderFrame) ours.get(1);
        BasicProperties p = (BasicProperties) h.properties();
        AMQP.BasicProperties q = (AMQP.BasicProperties) theirs.get(1);
        require(p.contentType().equals(q.getContentType()) && p.deliveryMode().equals(q.getDeliveryMode())
                && p.messageId().equals(q.getMessageId()) && p.timestamp() * 1000 == q.getTimestamp().getTime(), "properties");
        require(norm(p.headers()).equals(norm(q.getHeaders())) && norm(p.headers()).equals(norm(headers)), "headers");
        require(h.bodySize() == ((AMQContentHeader) theirs.get(1)).getBodySize(), "body size");
        require(((Frame.BodyFrame) ours.get(2)).payload().equals(Bytes.of(body)) && Arrays.equals((byte[]) theirs.get(2), body), "body");
    }

    public static void main(String[] args) throws Exception {
        int repeats = args.length > 0 ? Integer.parseInt(args[0]) : 9;
        long roundMs = args.length > 1 ? Long.parseLong(args[1]) : 400;

        // tables in the client's own key order, so both sides write the same octets
        headers = ordered(new AMQP.BasicProperties.Builder().headers(rawHeaders()).build().getHeaders());
        queueArgs = ordered(new AMQImpl.Queue.Declare(0, QUEUE, false, true, false, false, false, rawQueueArgs()).getArguments());
        serverProperties = rawServerProperties();

        // case 1 and 5: the same octets
        oursEncodePublish();
        byte[] oursPublish = OUT.toByteArray();
        clientEncodePublish();
        byte[] publishWire = BOS.toByteArray();
        require(Arrays.equals(oursPublish, publishWire), "case 1: both sides write the same octets");
        OUT.clear().writeMethod(1, new QueueDeclare(0, QUEUE, false, true, false, false, false, queueArgs));
        byte[] declareWire = clientBytes(new AMQImpl.Queue.Declare(0, QUEUE, false, true, false, false, false, queueArgs), 1);
        require(Arrays.equals(OUT.toByteArray(), declareWire), "case 5: both sides write the same octets");

        // the decode inputs, written by the client
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        DataOutputStream d = new DataOutputStream(b);
        AMQP.BasicProperties dprops = new AMQP.BasicProperties.Builder().contentType(CONTENT_TYPE).deliveryMode(2)
                .headers(headers).messageId(MESSAGE_ID).timestamp(new Date(TIMESTAMP * 1000)).build();
        new AMQImpl.Basic.Deliver(CONSUMER_TAG, DELIVERY_TAG, true, EXCHANGE, ROUTING_KEY).toFrame(1).writeTo(d);
        dprops.toFrame(1, BODY_1K.length).writeTo(d);
        com.rabbitmq.client.impl.Frame.fromBodyFragment(1, BODY_1K, 0, BODY_1K.length).writeTo(d);
        d.flush();
        byte[] deliverWire = b.toByteArray();
        byte[] startWire = clientBytes(new AMQImpl.Connection.Start(0, 9, serverProperties,
                LongStringHelper.asLongString("AMQPLAIN PLAIN"), LongStringHelper.asLongString("en_US")), 0);

        // cases 2 to 5: the same values
        checkPublishDecode(oursDecode(publishWire), clientDecode(publishWire), BODY_128);
        require(((Frame.MethodFrame) oursDecode(publishWire).get(0)).method().equals(new BasicPublish(0, EXCHANGE, ROUTING_KEY, false, false)), "case 2 method");
        checkPublishDecode(oursDecode(deliverWire), clientDecode(deliverWire), BODY_1K);
        require(((Frame.MethodFrame) oursDecode(deliverWire).get(0)).method().equals(new BasicDeliver(CONSUMER_TAG, DELIVERY_TAG, true, EXCHANGE, ROUTING_KEY)), "case 3 method");
        AMQImpl.Basic.Deliver cd = (AMQImpl.Basic.Deliver) clientDecode(deliverWire).get(0);
        require(cd.getConsumerTag().equals(CONSUMER_TAG) && cd.getDeliveryTag() == DELIVERY_TAG && cd.getRedelivered(), "case 3 client method");
        ConnectionStart os = (ConnectionStart) ((Frame.MethodFrame) oursDecode(startWire).get(0)).method();
        AMQImpl.Connection.Start cs = (AMQImpl.Connection.Start) clientDecode(startWire).get(0);
        require(norm(os.serverProperties()).equals(norm(cs.getServerProperties())) && norm(os.serverProperties()).equals(norm(serverProperties))
                && os.mechanisms().equals(Bytes.utf8("AMQPLAIN PLAIN")) && os.locales().equals(Bytes.utf8("en_US")), "case 4");
        List<Frame> od = oursDecode(declareWire);
        AMQImpl.Queue.Declare cq = (AMQImpl.Queue.Declare) clientDecode(declareWire).get(0);
        require(((Frame.MethodFrame) od.get(0)).method().equals(new QueueDeclare(0, QUEUE, false, true, false, false, false, queueArgs))
                && norm(cq.getArguments()).equals(norm(queueArgs)) && cq.getQueue().equals(QUEUE) && cq.getDurable(), "case 5 values");

        String[] names = {
            "1 encode basic.publish+header+128B body",
            "2 decode basic.publish+header+128B body",
            "3 decode basic.deliver+header+1KiB body",
            "4 decode connection.start (RabbitMQ-like)",
            "5 encode+decode queue.declare w/ arguments",
        };
        Op[][] ops = {
            {JavaBench::oursEncodePublish, JavaBench::clientEncodePublish},
            {() -> oursDecode(publishWire).size(), () -> clientDecode(publishWire).size()},
            {() -> oursDecode(deliverWire).size(), () -> clientDecode(deliverWire).size()},
            {() -> oursDecode(startWire).size(), () -> clientDecode(startWire).size()},
            {JavaBench::oursQueueDeclare, JavaBench::clientQueueDeclare},
        };
        long sink = 0;
        // warm-up: every operation long enough for the JIT to compile it
        for (Op[] pair : ops) {
            for (Op op : pair) {
                long until = System.nanoTime() + 1_500_000_000L;
                while (System.nanoTime() < until) {
                    for (int i = 0; i < 1000; i++) {
                        sink += op.run();
                    }
                }
            }
        }
        for (int c = 0; c < ops.length; c++) {
            double[][] rates = new double[2][repeats];
            for (int r = 0; r < repeats; r++) {
                for (int side = 0; side < 2; side++) {
                    Op op = ops[c][side];
                    long n = 0;
                    long start = System.nanoTime();
                    long until = start + roundMs * 1_000_000L;
                    long now;
                    do {
                        for (int i = 0; i < 1000; i++) {
                            sink += op.run();
                        }
                        n += 1000;
                        now = System.nanoTime();
                    } while (now < until);
                    rates[side][r] = n * 1e9 / (now - start);
                }
            }
            Arrays.sort(rates[0]);
            Arrays.sort(rates[1]);
            System.out.printf("%s|%.0f|%.0f%n", names[c], rates[0][repeats / 2], rates[1][repeats / 2]);
        }
        System.out.println("checksum " + sink);
    }
}
