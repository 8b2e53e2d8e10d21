// The fault driver of the generated Java client (package amqgen.rabbit): tests/faults/protocol.md's scenarios, one
// at a time, on the lines of stdin and stdout. Only the client's own exceptions map to outcome kinds; anything else
// is "outcome error". Usage: java FaultDriver (tests/faults/java_driver.py gives the command).
import amqgen.rabbit.BasicConsume;
import amqgen.rabbit.BasicProperties;
import amqgen.rabbit.BasicPublish;
import amqgen.rabbit.BasicQos;
import amqgen.rabbit.BasicAck;
import amqgen.rabbit.BasicDeliver;
import amqgen.rabbit.ExchangeDeclare;
import amqgen.rabbit.ExchangeDelete;
import amqgen.rabbit.QueueBind;
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
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
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
        } else if (e instanceof Client.RecoveryFailedException) {
            o = new Outcome("recovery_failed");
        } else if (e instanceof Client.PublishNotConfirmedException u) {
            o = new Outcome("unconfirmed", "messages", u.messages().size());
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
            int sent = 0;
            try {
                BasicPublish missing = new BasicPublish().withExchange("amqgen.fault.missing").withRoutingKey(p.get("queue"));
                for (; sent < num(p, "count"); sent++) {
                    ch.publish(missing, null, "0123456789".getBytes(StandardCharsets.UTF_8));
                }
                boolean all = ch.waitForConfirms();
                o = new Outcome("ok", "acked", all);
            } catch (Client.ChannelClosedException e) {
                // the 404 can close the channel while the loop still publishes: the publish that meets the close
                // throws with those written and left unconfirmed, and it and the rest were never sent; the caller
                // knows every message's fate either way, which is what the row counts
                o = outcomeOf(e).with("unconfirmed", e.unconfirmed().size() + num(p, "count") - sent);
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

    // -- recovery (issue 42): protocol.md's "Recovery" and "The recovery soak" ----------------------------------
    /** A recovering connection's notifications as events, counted; latches for the scenarios that wait on them. */
    static final class Recover implements Client.RecoveryListener {
        final String conn; // the soak's "producer" or "consumer"; null in the matrix rows
        final AtomicInteger recoveries = new AtomicInteger();
        final LinkedBlockingQueue<String> notices = new LinkedBlockingQueue<>();
        volatile Runnable onRecovered = () -> { };
        volatile java.util.function.Consumer<List<Client.Unconfirmed>> onRepublished = m -> { };

        Recover(String conn) {
            this.conn = conn;
        }

        Object[] who(Object... kv) {
            if (conn == null) {
                return kv;
            }
            Object[] out = Arrays.copyOf(kv, kv.length + 2);
            out[kv.length] = "conn";
            out[kv.length + 1] = conn;
            return out;
        }

        @Override
        public void started(Client.AmqpClientException cause) {
            say("event", "recovery_started", who("cause", spelled(cause) + ": " + cause.getMessage()));
        }

        @Override
        public void recovered() {
            recoveries.incrementAndGet();
            say("event", "recovered", who());
            onRecovered.run();
            notices.add("recovered");
        }

        @Override
        public void failed(Client.RecoveryFailedException e) {
            Throwable c = e.getCause() == null ? e : e.getCause();
            say("event", "recovery_failed", who("cause", spelled(c) + ": " + c.getMessage()));
            notices.add("failed");
        }

        @Override
        public void republished(int channel, List<Client.Unconfirmed> messages) {
            onRepublished.accept(messages);
        }

        /** Waits for the next notification of this kind. */
        void await(String what) throws Exception {
            long until = System.nanoTime() + NOTICE_WAIT_S * 1_000_000_000L;
            while (true) {
                String n = notices.poll(Math.max(1, (until - System.nanoTime()) / 1_000_000L), TimeUnit.MILLISECONDS);
                if (n == null) {
                    throw new Outcome("error", "type", "NoNotification", "message", "no " + what + " in " + NOTICE_WAIT_S + " s");
                }
                if (n.equals(what)) {
                    return;
                }
            }
        }

        Client.Recovering connect(Map<String, String> p, Client.RecoveryPolicy policy) {
            Client.Options o = new Client.Options().heartbeat(Integer.parseInt(p.get("heartbeat")))
                    .connectionTimeout(Duration.ofMillis((long) (Double.parseDouble(p.getOrDefault("timeout", "10")) * 1000)));
            return Client.connectRecovering(p.get("url"), o, policy.listener(this));
        }

        Client.Recovering connect(Map<String, String> p) {
            return connect(p, quick());
        }

        /** The rows' policy: the defaults, but initial delay 0.1 s and max delay 1 s. */
        static Client.RecoveryPolicy quick() {
            return new Client.RecoveryPolicy().initialDelay(Duration.ofMillis(100)).maxDelay(Duration.ofSeconds(1));
        }

        Outcome closing(Client.Recovering conn, Throwable e) {
            Outcome o = outcomeOf(e);
            try {
                conn.close();
                o.with("close_ok", 1);
            } catch (RuntimeException x) {
                o.with("close_ok", 0);
            }
            return o.with("recoveries", recoveries.get());
        }

        static byte[] text(String s) {
            return s.getBytes(StandardCharsets.UTF_8);
        }

        static void consume(Map<String, String> p) throws Exception {
            Recover r = new Recover(null);
            Client.Recovering conn = r.connect(p);
            try {
                Client.RecoveringChannel ch1 = conn.openChannel();
                ch1.basicQos(new BasicQos().withPrefetchCount(10));
                String x = p.get("queue") + ".x";
                ch1.exchangeDeclare(new ExchangeDeclare().withExchange(x).withType("direct"));
                String q = ch1.queueDeclare(new QueueDeclare().withQueue("").withExclusive(true)).queue();
                say("event", "queue", "name", q);
                ch1.queueBind(new QueueBind().withQueue(q).withExchange(x).withRoutingKey("k"));
                BasicConsume consume = new BasicConsume().withQueue(q);
                Client.RecoveringSubscription it = null;
                LinkedBlockingQueue<Client.Delivery> got = new LinkedBlockingQueue<>();
                if (p.get("style").equals("iterator")) {
                    it = ch1.consume(consume);
                } else {
                    ch1.consume(consume, got::add);
                }
                Client.RecoveringChannel ch2 = conn.openChannel();
                ch2.confirmSelect(new ConfirmSelect());
                BasicPublish publish = new BasicPublish().withExchange(x).withRoutingKey("k");
                int consumed = 0;
                for (String body : new String[] {"one", "two"}) {
                    ch2.publish(publish, null, text(body));
                    ch2.waitForConfirms();
                    Client.Delivery d = it != null ? it.poll(Duration.ofSeconds(NOTICE_WAIT_S))
                            : got.poll(NOTICE_WAIT_S, TimeUnit.SECONDS);
                    if (d == null || !Arrays.equals(d.body(), text(body))) {
                        conn.close();
                        throw new Outcome("error", "type", "NotDelivered", "message", body + ": " + d);
                    }
                    ch1.basicAck(new BasicAck().withDeliveryTag(d.deliveryTag()));
                    consumed++;
                    if (body.equals("one")) {
                        say("phase", "consuming");
                        r.await("recovered");
                    }
                }
                String m = conn.currentName(q);
                say("event", "queue", "name", m);
                ch1.exchangeDelete(new ExchangeDelete().withExchange(x));
                conn.close();
                throw new Outcome("ok", "consumed", consumed, "renamed", !m.equals(q), "recoveries", r.recoveries.get());
            } catch (RuntimeException e) {
                throw r.closing(conn, e);
            }
        }

        static void refused(Map<String, String> p) throws Exception {
            Recover r = new Recover(null);
            Outcome o;
            try {
                r.connect(p).close();
                o = new Outcome("ok", "note", "the connection was not refused");
            } catch (RuntimeException e) {
                o = outcomeOf(e);
            }
            Thread.sleep(2000);
            throw o.with("recoveries", r.recoveries.get());
        }

        static void userClose(Map<String, String> p) throws Exception {
            Recover r = new Recover(null);
            Client.Recovering conn = r.connect(p);
            try {
                conn.openChannel();
            } catch (RuntimeException e) {
                throw r.closing(conn, e);
            }
            conn.close();
            Thread.sleep(2000);
            throw new Outcome("ok", "recoveries", r.recoveries.get());
        }

        static void channelError(Map<String, String> p) throws Exception {
            Recover r = new Recover(null);
            Client.Recovering conn = r.connect(p);
            try {
                Outcome o;
                try {
                    conn.openChannel().queueDeclare(declare(p.get("queue")).withPassive(true));
                    o = new Outcome("ok", "note", "the passive declare of a missing queue worked");
                } catch (Client.ChannelClosedException e) {
                    o = outcomeOf(e);
                }
                Thread.sleep(2000);
                int usable = 0;
                try {
                    conn.openChannel().queueDeclare(declare(p.get("queue")));
                    usable = 1;
                } catch (RuntimeException e) {
                    System.err.println("not usable: " + e);
                }
                conn.close();
                throw o.with("usable", usable).with("recoveries", r.recoveries.get());
            } catch (RuntimeException e) {
                throw r.closing(conn, e);
            }
        }

        static void unconfirmed(Map<String, String> p) throws Exception {
            Recover r = new Recover(null);
            Client.Recovering conn = r.connect(p, quick().republish(num(p, "republish") == 1));
            int count = num(p, "count");
            try {
                Client.RecoveringChannel ch = conn.openChannel();
                ch.confirmSelect(new ConfirmSelect());
                ch.queueDeclare(declare(p.get("queue")));
                say("phase", "ready");
                waitGo();
                for (int i = 0; i < count; i++) {
                    ch.publish(to(p.get("queue")), null, text(Integer.toString(i)));
                }
                ch.waitForConfirms();
                conn.close();
                throw new Outcome("ok", "confirmed", count, "recoveries", r.recoveries.get());
            } catch (Client.PublishNotConfirmedException e) {
                throw r.closing(conn, e);
            } catch (RuntimeException e) {
                throw r.closing(conn, e);
            }
        }

        static void staleAck(Map<String, String> p) throws Exception {
            Recover r = new Recover(null);
            Client.Recovering conn = r.connect(p);
            try {
                Client.RecoveringChannel ch = conn.openChannel();
                ch.queueDeclare(declare(p.get("queue")));
                ch.publish(to(p.get("queue")), null, text("x"));
                ch.flush();
                Client.RecoveringSubscription it = ch.consume(new BasicConsume().withQueue(p.get("queue")));
                Client.Delivery before = it.next();
                say("phase", "delivered");
                r.await("recovered");
                ch.basicAck(new BasicAck().withDeliveryTag(before.deliveryTag())); // dropped: the old connection's
                Client.Delivery again = it.poll(Duration.ofSeconds(NOTICE_WAIT_S));
                if (again == null) {
                    conn.close();
                    throw new Outcome("error", "type", "NotRedelivered", "message", "no delivery after the recovery");
                }
                ch.basicAck(new BasicAck().withDeliveryTag(again.deliveryTag()));
                boolean redelivered = ((BasicDeliver) again.method()).redelivered();
                ch.queueDeclare(declare(p.get("queue")).withPassive(true)); // throws when the channel was closed
                boolean usable = ch.open() && conn.isOpen() && ch.staleSettlements() == 1;
                conn.close();
                throw new Outcome("ok", "redelivered", redelivered, "usable", usable, "recoveries", r.recoveries.get());
            } catch (RuntimeException e) {
                throw r.closing(conn, e);
            }
        }

        static void givesUp(Map<String, String> p) throws Exception {
            Recover r = new Recover(null);
            Client.Recovering conn = r.connect(p, quick().maxAttempts(3));
            try {
                Client.RecoveringChannel ch = conn.openChannel();
                say("phase", "connected");
                r.await("failed");
                ch.queueDeclare(declare(p.get("queue")));
                conn.close();
                throw new Outcome("ok", "note", "a call after the recovery failed worked");
            } catch (RuntimeException e) {
                throw r.closing(conn, e);
            }
        }

        // -- the soak ---------------------------------------------------------------------------------------
        static void soak(Map<String, String> p) throws Exception {
            int count = num(p, "count");
            int size = num(p, "size");
            int window = num(p, "window");
            double rate = Double.parseDouble(p.get("rate"));
            boolean republish = num(p, "republish") == 1;
            String exchange = p.get("exchange");
            String key = p.get("routing_key");
            java.io.Writer results = new java.io.BufferedWriter(new java.io.OutputStreamWriter(
                    new java.io.FileOutputStream(p.get("results"), true), StandardCharsets.UTF_8));
            Object fileLock = new Object();
            java.util.function.Consumer<String> line = l -> {
                synchronized (fileLock) {
                    try {
                        results.write(l);
                        results.write('\n');
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }
            };
            Runnable flush = () -> {
                synchronized (fileLock) {
                    try {
                        results.flush();
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }
            };
            boolean[] delivered = new boolean[count];
            AtomicInteger consumed = new AtomicInteger();
            Recover cr = new Recover("consumer");
            Recover pr = new Recover("producer");
            Client.Recovering cconn = cr.connect(p, new Client.RecoveryPolicy());
            Client.Recovering pconn = null;
            long published = 0;
            int confirmed = 0;
            try {
                Client.RecoveringChannel cch = cconn.openChannel();
                cch.exchangeDeclare(new ExchangeDeclare().withExchange(exchange).withType("direct"));
                String q = cch.queueDeclare(new QueueDeclare().withQueue("")).queue();
                say("event", "queue", "name", q);
                String[] shown = {q};
                cr.onRecovered = () -> {
                    String now = cconn.currentName(q);
                    if (!now.equals(shown[0])) {
                        shown[0] = now;
                        say("event", "queue", "name", now);
                    }
                };
                cch.queueBind(new QueueBind().withQueue(q).withExchange(exchange).withRoutingKey(key));
                cch.basicQos(new BasicQos().withPrefetchCount(100));
                cch.consume(new BasicConsume().withQueue(q), d -> {
                    String b = new String(d.body(), 0, 12, StandardCharsets.US_ASCII);
                    int id = Integer.parseInt(b);
                    boolean again = ((BasicDeliver) d.method()).redelivered();
                    line.accept("D " + id + " " + (again ? 1 : 0));
                    synchronized (delivered) {
                        if (!delivered[id]) {
                            delivered[id] = true;
                            consumed.incrementAndGet();
                        }
                    }
                    cch.basicAck(new BasicAck().withDeliveryTag(d.deliveryTag()));
                });
                pconn = pr.connect(p, new Client.RecoveryPolicy().republish(republish));
                Client.RecoveringChannel pch = pconn.openChannel();
                pch.confirmSelect(new ConfirmSelect());
                java.util.Set<Integer> returned = java.util.concurrent.ConcurrentHashMap.newKeySet();
                pch.onReturn(rt -> returned.add(Integer.parseInt(new String(rt.body(), 0, 12, StandardCharsets.US_ASCII))));
                java.util.Set<Integer> again = java.util.concurrent.ConcurrentHashMap.newKeySet();
                pr.onRepublished = msgs -> {
                    for (Client.Unconfirmed u : msgs) {
                        int id = Integer.parseInt(new String(u.body(), 0, 12, StandardCharsets.US_ASCII));
                        again.add(id);
                        line.accept("U " + id);
                    }
                };
                BasicPublish publish = new BasicPublish().withExchange(exchange).withRoutingKey(key).withMandatory(true);
                byte[] pad = "x".repeat(Math.max(0, size - 12)).getBytes(StandardCharsets.US_ASCII);
                ArrayDeque<Integer> retry = new ArrayDeque<>();
                int nextId = 0;
                long t0 = System.nanoTime();
                long n = 0;
                while (confirmed < count) {
                    long due = t0 + (long) (n * window / rate * 1e9);
                    long sleep = due - System.nanoTime();
                    if (sleep > 0) {
                        Thread.sleep(sleep / 1_000_000L, (int) (sleep % 1_000_000L));
                    }
                    n++;
                    List<Integer> batch = new ArrayList<>();
                    while (batch.size() < window && (!retry.isEmpty() || nextId < count)) {
                        batch.add(!retry.isEmpty() ? retry.poll() : nextId++);
                    }
                    if (batch.isEmpty()) {
                        break;
                    }
                    for (int id : batch) {
                        byte[] body = new byte[12 + pad.length];
                        System.arraycopy(String.format("%012d", id).getBytes(StandardCharsets.US_ASCII), 0, body, 0, 12);
                        System.arraycopy(pad, 0, body, 12, pad.length);
                        pch.publish(publish, null, body);
                        published++;
                    }
                    java.util.Set<Integer> bad = new java.util.HashSet<>();
                    try {
                        pch.waitForConfirms();
                    } catch (Client.PublishNotConfirmedException e) {
                        for (Client.Unconfirmed u : e.messages()) {
                            bad.add(Integer.parseInt(new String(u.body(), 0, 12, StandardCharsets.US_ASCII)));
                        }
                    }
                    published += again.size(); // the client's republishes
                    again.clear();
                    bad.addAll(returned);
                    returned.clear();
                    for (int id : batch) {
                        if (bad.contains(id)) {
                            line.accept("U " + id);
                            retry.add(id);
                        } else {
                            line.accept("C " + id);
                            confirmed++;
                        }
                    }
                    for (int id : bad) {
                        if (!batch.contains(id)) { // reported late: it was counted confirmed in an earlier window
                            line.accept("U " + id);
                        }
                    }
                    flush.run();
                }
                long last = System.nanoTime();
                while (consumed.get() < count && System.nanoTime() - last < 120_000_000_000L) {
                    Thread.sleep(50);
                }
                pconn.close();
                cch.queueDelete(new amqgen.rabbit.QueueDelete().withQueue(cconn.currentName(q)));
                cconn.close();
                flush.run();
                results.close();
                throw new Outcome("ok", "published", published, "confirmed", confirmed, "consumed", consumed.get());
            } catch (RuntimeException e) {
                flush.run();
                if (pconn != null) {
                    pconn.close();
                }
                throw cr.closing(cconn, e).with("published", published).with("confirmed", confirmed);
            }
        }
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
            case "recover_consume" -> Recover.consume(p);
            case "recover_refused" -> Recover.refused(p);
            case "recover_user_close" -> Recover.userClose(p);
            case "recover_channel_error" -> Recover.channelError(p);
            case "recover_unconfirmed" -> Recover.unconfirmed(p);
            case "recover_stale_ack" -> Recover.staleAck(p);
            case "recover_gives_up" -> Recover.givesUp(p);
            case "soak" -> Recover.soak(p);
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
