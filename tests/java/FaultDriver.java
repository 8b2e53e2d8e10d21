// The fault driver of the generated Java client (package amqgen.rabbit): tests/faults/protocol.md's scenarios, one
// at a time, on the lines of stdin and stdout. Only the client's own exceptions map to outcome kinds; anything else
// is "outcome error". Usage: java FaultDriver (tests/faults/java_driver.py gives the command).
import amqgen.rabbit.BasicConsume;
import amqgen.rabbit.BasicProperties;
import amqgen.rabbit.BasicPublish;
import amqgen.rabbit.BasicQos;
import amqgen.rabbit.BasicAck;
import amqgen.rabbit.Client;
import amqgen.rabbit.ConfirmSelect;
import amqgen.rabbit.EncodeException;
import amqgen.rabbit.LocalProtocolException;
import amqgen.rabbit.QueueDeclare;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

public final class FaultDriver {
    static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    static final BufferedReader IN = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    /** the longest a scenario waits for a notification it is told will come */
    static final long NOTICE_WAIT_S = 60;

    /** An outcome line: a scenario ends by throwing one. */
    static final class Outcome extends Exception {
        private static final long serialVersionUID = 1L;
        final String kind;
        final Map<String, Object> fields = new LinkedHashMap<>();

        Outcome(String kind, Object... kv) {
            super(kind, null, false, false);
            this.kind = kind;
            for (int i = 0; i < kv.length; i += 2) {
                fields.put((String) kv[i], kv[i + 1]);
            }
        }

        Outcome with(String k, Object v) {
            fields.put(k, v);
            return this;
        }
    }

    // -- the lines -----------------------------------------------------------------------------------------
    static String encode(String s) {
        StringBuilder b = new StringBuilder();
        for (byte x : s.getBytes(StandardCharsets.UTF_8)) {
            int c = x & 0xff;
            if (c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_'
                    || c == '~') {
                b.append((char) c);
            } else {
                b.append('%').append(String.format("%02X", c));
            }
        }
        return b.toString();
    }

    static synchronized void say(String kind, String name, Map<String, Object> fields) {
        StringBuilder b = new StringBuilder(kind).append(' ').append(name);
        for (Map.Entry<String, Object> e : fields.entrySet()) {
            Object v = e.getValue() instanceof Boolean t ? (t ? 1 : 0) : e.getValue();
            b.append(' ').append(e.getKey()).append('=').append(encode(String.valueOf(v)));
        }
        OUT.println(b);
    }

    static void say(String kind, String name, Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        say(kind, name, m);
    }

    static void waitGo() throws IOException {
        String line = IN.readLine();
        if (line == null || !line.strip().equals("go")) {
            throw new IllegalStateException("expected go, got " + line);
        }
    }

    static int fds() {
        String[] names = new File("/proc/self/fd").list();
        return names == null ? -1 : names.length;
    }

    // -- the client's errors as outcome kinds ---------------------------------------------------------------
    static String spelled(Throwable e) {
        Class<?> c = e.getClass();
        return c.getEnclosingClass() != null ? c.getEnclosingClass().getSimpleName() + "." + c.getSimpleName()
                : c.getSimpleName();
    }

    static Outcome outcomeOf(Throwable e) {
        Outcome o;
        if (e instanceof Client.ConnectTimeoutException) {
            o = new Outcome("connect_timeout");
        } else if (e instanceof Client.ConnectFailedException) {
            o = new Outcome("connect_failed");
        } else if (e instanceof Client.VersionRefusedException v) {
            o = new Outcome("version_refused", "server", v.serverVersion());
        } else if (e instanceof Client.ConnectionClosedException c) {
            o = new Outcome("connection_closed", "code", c.replyCode());
        } else if (e instanceof Client.ConnectionLostException) {
            o = new Outcome("connection_lost");
        } else if (e instanceof Client.ChannelClosedException c) {
            o = new Outcome("channel_closed", "code", c.replyCode());
        } else if (e instanceof Client.ConsumerCancelledException) {
            o = new Outcome("consumer_cancelled");
        } else if (e instanceof EncodeException || e instanceof LocalProtocolException) {
            o = new Outcome("local_error");
        } else {
            String m = String.valueOf(e.getMessage()).replace('\n', ' ');
            return new Outcome("error", "type", e.getClass().getName(), "message", m.length() > 300 ? m.substring(0, 300) : m);
        }
        o.with("raised", spelled(e));
        if (e instanceof Client.AmqpClientException a && !a.unconfirmed().isEmpty()) {
            o.with("unconfirmed", a.unconfirmed().size());
        }
        return o;
    }

    /** The connection closed first, then the exception's outcome with close_ok. */
    static Outcome closing(Client conn, Throwable e) {
        Outcome o = outcomeOf(e);
        try {
            conn.close();
            o.with("close_ok", 1);
        } catch (RuntimeException x) {
            o.with("close_ok", 0);
        }
        return o;
    }

    static Client connect(Map<String, String> p) {
        Client.Options o = new Client.Options().heartbeat(Integer.parseInt(p.get("heartbeat")))
                .connectionTimeout(Duration.ofMillis((long) (Double.parseDouble(p.getOrDefault("timeout", "10")) * 1000)));
        return Client.connect(p.get("url"), o);
    }

    static int num(Map<String, String> p, String k) {
        return Integer.parseInt(p.get(k));
    }

    /** The roundtrip pattern: i in 4 octets (big-endian), then (i + k) % 256. */
    static byte[] body(int i, int size) {
        byte[] b = new byte[Math.max(4, size)];
        b[0] = (byte) (i >>> 24);
        b[1] = (byte) (i >>> 16);
        b[2] = (byte) (i >>> 8);
        b[3] = (byte) i;
        for (int k = 0; k < size - 4; k++) {
            b[4 + k] = (byte) ((i + k) % 256);
        }
        return size < 4 ? Arrays.copyOf(b, size) : b;
    }

    static QueueDeclare declare(String queue) {
        return new QueueDeclare().withQueue(queue);
    }

    static BasicPublish to(String queue) {
        return new BasicPublish().withRoutingKey(queue);
    }

    static void ack(Client.Channel ch, Client.Delivery d) {
        ch.basicAck(new BasicAck().withDeliveryTag(d.deliveryTag()));
    }

    // -- the scenarios ----------------------------------------------------------------------------------------
    static void connectScenario(Map<String, String> p) throws Exception {
        int before = fds();
        Client conn;
        try {
            conn = connect(p);
        } catch (RuntimeException e) {
            throw outcomeOf(e).with("fds", fds() - before);
        }
        say("phase", "connected");
        waitGo();
        var neg = conn.negotiated();
        conn.close();
        throw new Outcome("ok", "heartbeat", neg.heartbeat(), "frame_max", neg.frameMax(), "channel_max",
                neg.channelMax(), "fds", fds() - before);
    }

    static void publishStream(Map<String, String> p) throws Exception {
        Client conn = connect(p);
        long published = 0;
        long confirmed = 0;
        try {
            Client.Channel ch = conn.openChannel();
            ch.confirmSelect(new ConfirmSelect());
            ch.queueDeclare(declare(p.get("queue")));
            byte[] payload = new byte[num(p, "size")];
            int batch = num(p, "batch");
            say("phase", "publishing");
            long end = System.nanoTime() + num(p, "seconds") * 1_000_000_000L;
            BasicPublish publish = to(p.get("queue"));
            while (System.nanoTime() < end) {
                for (int i = 0; i < batch; i++) {
                    ch.publish(publish, null, payload);
                    published++;
                }
                ch.waitForConfirms();
                confirmed = published;
            }
        } catch (RuntimeException e) {
            throw closing(conn, e);
        }
        conn.close();
        throw new Outcome("ok", "published", published, "confirmed", confirmed);
    }

    static void awaitConfirm(Map<String, String> p) throws Exception {
        Client conn = connect(p);
        try {
            Client.Channel ch = conn.openChannel();
            ch.confirmSelect(new ConfirmSelect());
            ch.queueDeclare(declare(p.get("queue")));
            say("phase", "ready");
            waitGo();
            ch.publish(to(p.get("queue")), null, "0123456789".getBytes(StandardCharsets.UTF_8));
            ch.waitForConfirms();
        } catch (RuntimeException e) {
            throw closing(conn, e);
        }
        conn.close();
        throw new Outcome("ok");
    }

    static void consumeIdle(Map<String, String> p) throws Exception {
        Client conn = connect(p);
        try {
            Client.Channel ch = conn.openChannel();
            ch.queueDeclare(declare(p.get("queue")));
            try (Client.Subscription it = ch.consume(new BasicConsume().withQueue(p.get("queue")))) {
                say("phase", "consuming");
                if (it.hasNext()) {
                    it.next();
                }
            }
        } catch (RuntimeException e) {
            throw closing(conn, e);
        }
        conn.close();
        throw new Outcome("ok");
    }

    static void roundtrip(Map<String, String> p) throws Exception {
        Client conn = connect(p);
        int count = num(p, "count");
        int size = num(p, "size");
        boolean ok = true;
        int got = 0;
        try {
            Client.Channel ch = conn.openChannel();
            ch.confirmSelect(new ConfirmSelect());
            ch.queueDeclare(declare(p.get("queue")));
            for (int i = 0; i < count; i++) {
                ch.publish(to(p.get("queue")), null, body(i, size));
            }
            ch.waitForConfirms();
            try (Client.Subscription it = ch.consume(new BasicConsume().withQueue(p.get("queue")))) {
                while (got < count && it.hasNext()) {
                    Client.Delivery d = it.next();
                    ok &= Arrays.equals(d.body(), body(got, size));
                    ack(ch, d);
                    got++;
                }
            }
        } catch (RuntimeException e) {
            throw closing(conn, e);
        }
        conn.close();
        throw new Outcome("ok", "consumed", got, "body_ok", ok);
    }

    static void consumeAck(Map<String, String> p) throws Exception {
        Client conn = connect(p);
        conn.addCloseListener(e -> say("event", "closed", "code",
                e instanceof Client.ConnectionClosedException c ? c.replyCode() : 0));
        int count = num(p, "count");
        int acks = num(p, "ack");
        try {
            Client.Channel ch = conn.openChannel();
            ch.basicQos(new BasicQos().withPrefetchCount(count));
            int got = 0;
            try (Client.Subscription it = ch.consume(new BasicConsume().withQueue(p.get("queue")))) {
                while (it.hasNext()) {
                    Client.Delivery d = it.next();
                    got++;
                    if (got <= acks) {
                        ack(ch, d);
                    }
                    if (got == count) {
                        say("phase", "acked");
                    }
                }
            }
        } catch (RuntimeException e) {
            throw closing(conn, e);
        }
        conn.close();
        throw new Outcome("ok");
    }

    static void consumerCancel(Map<String, String> p) throws Exception {
        Client conn = connect(p);
        try {
            Client.Channel ch = conn.openChannel();
            ch.queueDeclare(declare(p.get("queue")));
            BasicConsume consume = new BasicConsume().withQueue(p.get("queue"));
            if (p.get("style").equals("iterator")) {
                Client.Subscription it = ch.consume(consume);
                say("phase", "consuming");
                it.hasNext(); // throws ConsumerCancelledException when the server cancels
                conn.close();
                throw new Outcome("ok", "note", "the iterator ended without saying the server cancelled it");
            }
            CountDownLatch cancelled = new CountDownLatch(1);
            ch.consume(consume, d -> { }, tag -> cancelled.countDown());
            say("phase", "consuming");
            if (!cancelled.await(NOTICE_WAIT_S, TimeUnit.SECONDS)) {
                conn.close();
                throw new Outcome("error", "type", "NoNotification", "message", "no cancel notification in "
                        + NOTICE_WAIT_S + " s");
            }
        } catch (RuntimeException e) {
            throw closing(conn, e);
        }
        conn.close();
        throw new Outcome("consumer_cancelled", "raised", "Client.Channel.consume(cancelled)");
    }

    static void confirmClosed(Map<String, String> p) throws Exception {
        Client conn = connect(p);
        try {
            Client.Channel ch = conn.openChannel();
            ch.confirmSelect(new ConfirmSelect());
            Outcome o;
            try {
                BasicPublish missing = new BasicPublish().withExchange("amqgen.fault.missing").withRoutingKey(p.get("queue"));
                for (int i = 0; i < num(p, "count"); i++) {
                    ch.publish(missing, null, "0123456789".getBytes(StandardCharsets.UTF_8));
                }
                boolean all = ch.waitForConfirms();
                o = new Outcome("ok", "acked", all);
            } catch (Client.ChannelClosedException e) {
                o = outcomeOf(e).with("unconfirmed", e.unconfirmed().size());
            }
            int usable = 0;
            try {
                conn.openChannel().queueDeclare(declare(p.get("queue")));
                usable = 1;
            } catch (RuntimeException e) {
                System.err.println("not usable: " + e);
            }
            conn.close();
            throw o.with("usable", usable);
        } catch (RuntimeException e) {
            throw closing(conn, e);
        }
    }

    static void mandatoryReturn(Map<String, String> p) throws Exception {
        Client conn = connect(p);
        AtomicReference<Client.Returned> returned = new AtomicReference<>();
        try {
            Client.Channel ch = conn.openChannel();
            ch.confirmSelect(new ConfirmSelect());
            ch.onReturn(r -> {
                returned.set(r);
                say("event", "returned", "code", r.method().replyCode());
            });
            ch.publish(to(p.get("queue")).withMandatory(true), null, "abc".getBytes(StandardCharsets.UTF_8));
            ch.waitForConfirms(); // the return's callback has run when it returns
        } catch (RuntimeException e) {
            throw closing(conn, e);
        }
        conn.close();
        Client.Returned r = returned.get();
        throw new Outcome("ok", "returned", r != null ? 1 : 0, "body_ok",
                r != null && Arrays.equals(r.body(), "abc".getBytes(StandardCharsets.UTF_8)));
    }

    static void blocked(Map<String, String> p) throws Exception {
        Client conn = connect(p);
        CountDownLatch blocked = new CountDownLatch(1);
        CountDownLatch unblocked = new CountDownLatch(1);
        conn.addBlockedListener(reason -> {
            say("event", "blocked", "reason", reason);
            blocked.countDown();
        }, () -> {
            say("event", "unblocked");
            unblocked.countDown();
        });
        try {
            Client.Channel ch = conn.openChannel();
            say("phase", "connected");
            waitGo();
            ch.publish(to(p.get("queue")), null, "0123456789".getBytes(StandardCharsets.UTF_8));
            ch.flush();
            if (!blocked.await(NOTICE_WAIT_S, TimeUnit.SECONDS)) {
                conn.close();
                throw new Outcome("error", "type", "NoNotification", "message", "no blocked notification");
            }
            say("phase", "blocked");
            waitGo();
            if (!unblocked.await(NOTICE_WAIT_S, TimeUnit.SECONDS)) {
                conn.close();
                throw new Outcome("error", "type", "NoNotification", "message", "no unblocked notification");
            }
        } catch (RuntimeException e) {
            throw closing(conn, e);
        }
        conn.close();
        throw new Outcome("ok");
    }

    static void callbackRaises(Map<String, String> p) throws Exception {
        Client conn = connect(p);
        AtomicReference<Client.ChannelClosedException> seen = new AtomicReference<>();
        CountDownLatch raised = new CountDownLatch(1);
        conn.onCallbackError(e -> {
            seen.set(e);
            raised.countDown();
        });
        RuntimeException boom = new IllegalStateException("the callback raises");
        try {
            Client.Channel ch = conn.openChannel();
            ch.queueDeclare(declare(p.get("queue")));
            ch.publish(to(p.get("queue")), null, "0123456789".getBytes(StandardCharsets.UTF_8));
            ch.consume(new BasicConsume().withQueue(p.get("queue")), d -> {
                throw boom;
            });
            if (!raised.await(NOTICE_WAIT_S, TimeUnit.SECONDS)) {
                conn.close();
                throw new Outcome("error", "type", "NoNotification", "message", "the callback's exception never came out");
            }
            Client.ChannelClosedException e = seen.get();
            if (e.getCause() != boom) {
                conn.close();
                throw new Outcome("error", "type", "WrongCause", "message", "cause " + e.getCause());
            }
            int usable = 0;
            try {
                conn.openChannel().queueDeclare(declare(p.get("queue")));
                usable = 1;
            } catch (RuntimeException x) {
                System.err.println("not usable: " + x);
            }
            conn.close();
            throw new Outcome("callback_error", "code", e.replyCode(), "usable", usable, "raised", spelled(e));
        } catch (RuntimeException e) {
            throw closing(conn, e);
        }
    }

    static int consumers(Client conn, String queue) {
        Client.Channel ch = conn.openChannel();
        int n = (int) ch.queueDeclare(declare(queue).withPassive(true)).consumerCount();
        ch.close();
        return n;
    }

    static void consumeLeave(Map<String, String> p) throws Exception {
        Client conn = connect(p);
        int consumed = 0;
        int during;
        try {
            Client.Channel ch = conn.openChannel();
            ch.queueDeclare(declare(p.get("queue")));
            ch.publish(to(p.get("queue")), null, body(0, 10));
            ch.publish(to(p.get("queue")), null, body(1, 10));
            ch.flush();
            BasicConsume consume = new BasicConsume().withQueue(p.get("queue"));
            try (Client.Subscription it = ch.consume(consume)) {
                while (it.hasNext()) {
                    ack(ch, it.next());
                    consumed++;
                    break; // leaving the loop: the try closes the subscription
                }
            }
            say("phase", "left", "consumers", consumers(conn, p.get("queue")));
            waitGo();
            try (Client.Subscription it = ch.consume(consume)) {
                if (it.hasNext()) {
                    ack(ch, it.next());
                    consumed++;
                }
                during = consumers(conn, p.get("queue")); // this consumer only: the first one is gone
            }
        } catch (RuntimeException e) {
            throw closing(conn, e);
        }
        conn.close();
        throw new Outcome("ok", "consumers", during, "consumed", consumed);
    }

    static void workerAcks(Map<String, String> p) throws Exception {
        Client conn = connect(p);
        int count = num(p, "count");
        CountDownLatch acked = new CountDownLatch(count);
        ExecutorService workers = Executors.newFixedThreadPool(4);
        try {
            Client.Channel ch = conn.openChannel();
            ch.basicQos(new BasicQos().withPrefetchCount(num(p, "prefetch")));
            try (Client.Subscription it = ch.consume(new BasicConsume().withQueue(p.get("queue")))) {
                for (int i = 0; i < count && it.hasNext(); i++) {
                    Client.Delivery d = it.next();
                    workers.execute(() -> {
                        ack(ch, d);
                        acked.countDown();
                    });
                }
                if (!acked.await(NOTICE_WAIT_S, TimeUnit.SECONDS)) {
                    conn.close();
                    throw new Outcome("error", "type", "Stalled", "message", (count - acked.getCount()) + " acked");
                }
            }
        } catch (RuntimeException e) {
            throw closing(conn, e);
        } finally {
            workers.shutdownNow();
        }
        conn.close();
        throw new Outcome("ok", "consumed", count - acked.getCount());
    }

    static void twoThreads(Map<String, String> p) throws Exception {
        Client conn = connect(p);
        int slow = 0;
        try {
            Client.Channel a = conn.openChannel();
            a.queueDeclare(declare(p.get("queue")));
            Client.Subscription idle = a.consume(new BasicConsume().withQueue(p.get("queue")));
            AtomicReference<Throwable> failed = new AtomicReference<>();
            Thread consumer = new Thread(() -> {
                try {
                    while (idle.hasNext()) {
                        idle.next();
                    }
                } catch (RuntimeException e) {
                    failed.set(e);
                }
            });
            consumer.start();
            AtomicInteger slowCalls = new AtomicInteger();
            AtomicReference<RuntimeException> callsFailed = new AtomicReference<>();
            Thread caller = new Thread(() -> {
                try {
                    Client.Channel b = conn.openChannel();
                    for (int i = 0; i < num(p, "calls"); i++) {
                        long t0 = System.nanoTime();
                        b.queueDeclare(declare(p.get("queue")).withPassive(true));
                        if (System.nanoTime() - t0 > 1_000_000_000L) {
                            slowCalls.incrementAndGet();
                        }
                    }
                } catch (RuntimeException e) {
                    callsFailed.set(e);
                }
            });
            caller.start();
            caller.join();
            idle.close();
            consumer.join(10_000);
            if (callsFailed.get() != null) {
                throw callsFailed.get();
            }
            if (failed.get() != null) {
                throw new IllegalStateException("the consuming thread failed", failed.get());
            }
            slow = slowCalls.get();
        } catch (RuntimeException e) {
            throw closing(conn, e);
        }
        conn.close();
        throw new Outcome("ok", "slow_calls", slow);
    }

    static void localRefusal(Map<String, String> p) throws Exception {
        Client conn = connect(p);
        try {
            Client.Channel ch = conn.openChannel();
            Outcome o;
            try {
                if (p.get("what").equals("routing_key")) {
                    ch.publish(new BasicPublish().withRoutingKey("k".repeat(300)), null, new byte[1]);
                } else {
                    long frameMax = conn.negotiated().frameMax();
                    BasicProperties props = BasicProperties.builder()
                            .headers(Map.of("big", "h".repeat((int) frameMax + 1000))).build();
                    ch.publish(to(p.get("queue")), props, new byte[1]);
                }
                ch.flush();
                o = new Outcome("error", "type", "NotRefused", "message", "the client sent it");
            } catch (EncodeException | LocalProtocolException e) {
                o = outcomeOf(e);
            }
            int usable = 0;
            try {
                ch.queueDeclare(declare(p.get("queue")));
                usable = 1;
            } catch (RuntimeException e) {
                System.err.println("not usable: " + e);
            }
            conn.close();
            throw o.with("usable", usable);
        } catch (RuntimeException e) {
            throw closing(conn, e);
        }
    }

    static void bigMessage(Map<String, String> p) throws Exception {
        Client conn = connect(p);
        boolean ok;
        try {
            Client.Channel ch = conn.openChannel();
            ch.confirmSelect(new ConfirmSelect());
            ch.queueDeclare(declare(p.get("queue")));
            byte[] b = body(0, num(p, "size"));
            ch.publish(to(p.get("queue")), null, b);
            ch.waitForConfirms();
            try (Client.Subscription it = ch.consume(new BasicConsume().withQueue(p.get("queue")))) {
                Client.Delivery d = it.next();
                ok = Arrays.equals(d.body(), b);
                ack(ch, d);
            }
        } catch (RuntimeException e) {
            throw closing(conn, e);
        }
        conn.close();
        throw new Outcome("ok", "body_ok", ok);
    }

    /** tests/faults/server.py's bodies: channel 1 bytes(range(256)) * 40, channel 2 "second channel " * 700. */
    static byte[] serverBody(int channel) {
        if (channel == 1) {
            byte[] b = new byte[256 * 40];
            for (int i = 0; i < b.length; i++) {
                b[i] = (byte) (i % 256);
            }
            return b;
        }
        return "second channel ".repeat(700).getBytes(StandardCharsets.US_ASCII);
    }

    static void consumeServer(Map<String, String> p) throws Exception {
        Client conn = connect(p);
        int consumed = 0;
        boolean ok = true;
        try {
            Client.Channel one = conn.openChannel();
            Client.Channel two = conn.openChannel();
            Client.Subscription s1 = one.consume(new BasicConsume().withQueue("q1"));
            Client.Subscription s2 = two.consume(new BasicConsume().withQueue("q2"));
            for (Client.Subscription s : new Client.Subscription[] {s1, s2}) {
                Client.Delivery d = s.poll(Duration.ofSeconds(10));
                if (d != null) {
                    consumed++;
                    ok &= Arrays.equals(d.body(), serverBody(d.channel()));
                }
            }
        } catch (RuntimeException e) {
            throw closing(conn, e);
        }
        conn.close();
        throw new Outcome("ok", "consumed", consumed, "body_ok", ok && consumed == 2);
    }

    static void run(String scenario, Map<String, String> p) throws Exception {
        switch (scenario) {
            case "connect" -> connectScenario(p);
            case "publish_stream" -> publishStream(p);
            case "await_confirm" -> awaitConfirm(p);
            case "consume_idle" -> consumeIdle(p);
            case "roundtrip" -> roundtrip(p);
            case "consume_ack" -> consumeAck(p);
            case "consumer_cancel" -> consumerCancel(p);
            case "confirm_closed" -> confirmClosed(p);
            case "mandatory_return" -> mandatoryReturn(p);
            case "blocked" -> blocked(p);
            case "callback_raises" -> callbackRaises(p);
            case "consume_leave" -> consumeLeave(p);
            case "worker_acks" -> workerAcks(p);
            case "two_threads" -> twoThreads(p);
            case "local_refusal" -> localRefusal(p);
            case "big_message" -> bigMessage(p);
            case "consume_server" -> consumeServer(p);
            default -> throw new Outcome("error", "type", "NotImplemented", "message", "no scenario " + scenario
                    + " in the Java driver");
        }
        throw new Outcome("error", "type", "NoOutcome", "message", scenario + " ended without an outcome");
    }

    public static void main(String[] args) throws Exception {
        // the classes a failed connect needs, loaded now: a class loaded during a connect would count in its fds
        for (Class<?> c : new Class<?>[] {Client.ConnectFailedException.class, Client.ConnectTimeoutException.class,
                Client.VersionRefusedException.class, Client.ConnectionClosedException.class,
                Client.ConnectionLostException.class, java.net.UnknownHostException.class, Outcome.class}) {
            c.getName();
        }
        // and the JVM's own one-time descriptors (NIO's pre-close socket), opened by the first socket closed
        try (java.nio.channels.SocketChannel s = java.nio.channels.SocketChannel.open();
                java.nio.channels.Selector sel = java.nio.channels.Selector.open()) {
            s.configureBlocking(false);
            s.register(sel, java.nio.channels.SelectionKey.OP_CONNECT);
        }
        String line;
        while ((line = IN.readLine()) != null) {
            String[] words = line.strip().split(" ");
            if (words[0].isEmpty()) {
                continue;
            }
            if (words[0].equals("quit")) {
                return;
            }
            Map<String, String> params = new LinkedHashMap<>();
            for (int i = 2; i < words.length; i++) {
                String[] kv = words[i].split("=", 2);
                params.put(kv[0], URLDecoder.decode(kv.length > 1 ? kv[1].replace("+", "%2B") : "", StandardCharsets.UTF_8));
            }
            try {
                run(words[1], params);
            } catch (Outcome o) {
                say("outcome", o.kind, o.fields);
            } catch (Throwable e) { // reported to the harness, never fatal
                e.printStackTrace();
                String m = String.valueOf(e.getMessage()).replace('\n', ' ');
                say("outcome", "error", "type", e.getClass().getName(), "message", m.length() > 300 ? m.substring(0, 300) : m);
            }
        }
    }
}
