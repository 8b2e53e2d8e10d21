// Client CPU per message: the generated Java client (package amqgen.rabbit) or the RabbitMQ Java client 5.0, one
// per JVM, against RabbitMQ, with a real heartbeat. Messages of 128 octets; three phases on fresh exclusive queues:
//   each:      publish with confirms, every confirm awaited before the next publish;
//   pipelined: publish with confirms in batches of 1,000, each batch's confirms awaited;
//   consume:   the pipelined messages, basic.qos 100, a callback that acks each one.
// Warm-up rounds of the same work first, each on a connection of its own (the JIT: a first round's close and
// consume paths deoptimize code the next round's awaited publishes run, so one warm-up round leaves the JIT
// compiling in the timed round, for both clients), then the timed round: process CPU (user + system, the JVM's
// OperatingSystemMXBean: every thread, the JIT's and the GC's included) and wall time per phase.
// The third side, "floor", is no client: one thread on the generated Engine over a blocking java.net.Socket, each
// phase's octets written and read in line (no I/O thread, no dispatch thread, no locks): what the kernel and the
// codec cost, the least a client with these phases can spend.
// Usage: java JavaClientBench amqgen|rabbit|floor URI HEARTBEAT EACH PIPELINED WARMUP_ROUNDS
// Prints "RESULT side heartbeat phase n cpu_ns wall_ns" per phase of the timed round.
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import java.lang.management.ManagementFactory;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

public final class JavaClientBench {
    static final byte[] BODY = new byte[128];
    static final int BATCH = 1000;
    static final int PREFETCH = 100;

    static long cpu() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /** One phase's CPU and wall time, printed when the round is the timed one. */
    static final class Meter {
        final String side;
        final int heartbeat;
        final boolean report;
        long c0;
        long t0;

        Meter(String side, int heartbeat, boolean report) {
            this.side = side;
            this.heartbeat = heartbeat;
            this.report = report;
        }

        void start() {
            c0 = cpu();
            t0 = System.nanoTime();
        }

        void stop(String phase, int n) {
            long cpu = cpu() - c0;
            long wall = System.nanoTime() - t0;
            if (report) {
                System.out.println("RESULT " + side + " " + heartbeat + " " + phase + " " + n + " " + cpu + " " + wall);
            }
        }
    }

    static void amqgen(String uri, int heartbeat, int each, int pipelined, Meter m) throws Exception {
        amqgen.rabbit.Client.Options options = new amqgen.rabbit.Client.Options().heartbeat(heartbeat);
        try (amqgen.rabbit.Client conn = amqgen.rabbit.Client.connect(uri, options)) {
            if (conn.negotiated().heartbeat() != heartbeat) {
                throw new IllegalStateException("heartbeat " + conn.negotiated().heartbeat());
            }
            amqgen.rabbit.Client.Channel ch = conn.openChannel();
            String q1 = ch.queueDeclare(new amqgen.rabbit.QueueDeclare().withExclusive(true)).queue();
            String q2 = ch.queueDeclare(new amqgen.rabbit.QueueDeclare().withExclusive(true)).queue();
            ch.confirmSelect(new amqgen.rabbit.ConfirmSelect());
            amqgen.rabbit.BasicProperties props = amqgen.rabbit.BasicProperties.builder()
                    .contentType("application/octet-stream").build();
            amqgen.rabbit.BasicPublish p1 = new amqgen.rabbit.BasicPublish().withRoutingKey(q1);
            m.start();
            for (int i = 0; i < each; i++) {
                ch.publish(p1, props, BODY);
                if (!ch.waitForConfirms()) {
                    throw new IllegalStateException("nacked");
                }
            }
            m.stop("each", each);
            amqgen.rabbit.BasicPublish p2 = new amqgen.rabbit.BasicPublish().withRoutingKey(q2);
            m.start();
            for (int i = 0; i < pipelined; i++) {
                ch.publish(p2, props, BODY);
                if ((i + 1) % BATCH == 0 || i + 1 == pipelined) {
                    if (!ch.waitForConfirms()) {
                        throw new IllegalStateException("nacked");
                    }
                }
            }
            m.stop("pipelined", pipelined);
            ch.basicQos(new amqgen.rabbit.BasicQos().withPrefetchCount(PREFETCH));
            CountDownLatch done = new CountDownLatch(pipelined);
            m.start();
            ch.consume(new amqgen.rabbit.BasicConsume().withQueue(q2), d -> {
                ch.basicAck(new amqgen.rabbit.BasicAck().withDeliveryTag(d.deliveryTag()));
                done.countDown();
            });
            if (!done.await(600, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not all delivered");
            }
            m.stop("consume", pipelined);
        }
    }

    static void rabbit(String uri, int heartbeat, int each, int pipelined, Meter m) throws Exception {
        ConnectionFactory f = new ConnectionFactory();
        f.setUri(uri);
        f.setRequestedHeartbeat(heartbeat);
        try (Connection conn = f.newConnection()) {
            if (conn.getHeartbeat() != heartbeat) {
                throw new IllegalStateException("heartbeat " + conn.getHeartbeat());
            }
            Channel ch = conn.createChannel();
            String q1 = ch.queueDeclare("", false, true, true, null).getQueue();
            String q2 = ch.queueDeclare("", false, true, true, null).getQueue();
            ch.confirmSelect();
            AMQP.BasicProperties props = new AMQP.BasicProperties.Builder().contentType("application/octet-stream").build();
            m.start();
            for (int i = 0; i < each; i++) {
                ch.basicPublish("", q1, props, BODY);
                ch.waitForConfirmsOrDie(600_000);
            }
            m.stop("each", each);
            m.start();
            for (int i = 0; i < pipelined; i++) {
                ch.basicPublish("", q2, props, BODY);
                if ((i + 1) % BATCH == 0 || i + 1 == pipelined) {
                    ch.waitForConfirmsOrDie(600_000);
                }
            }
            m.stop("pipelined", pipelined);
            ch.basicQos(PREFETCH);
            CountDownLatch done = new CountDownLatch(pipelined);
            m.start();
            ch.basicConsume(q2, false, new DefaultConsumer(ch) {
                @Override
                public void handleDelivery(String tag, Envelope env, AMQP.BasicProperties p, byte[] body)
                        throws java.io.IOException {
                    ch.basicAck(env.getDeliveryTag(), false);
                    done.countDown();
                }
            });
            if (!done.await(600, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not all delivered");
            }
            m.stop("consume", pipelined);
        }
    }

    /** The floor: the engine on a blocking socket, one thread, everything in line. */
    static final class Floor {
        final amqgen.rabbit.Engine e = new amqgen.rabbit.Engine();
        final java.net.Socket s;
        final java.io.InputStream in;
        final java.io.OutputStream out;
        final byte[] buf = new byte[1 << 16];

        Floor(String uri, int heartbeat) throws Exception {
            java.net.URI u = java.net.URI.create(uri);
            s = new java.net.Socket(u.getHost(), u.getPort() < 0 ? 5672 : u.getPort());
            s.setTcpNoDelay(true);
            in = s.getInputStream();
            out = s.getOutputStream();
            e.initiate();
            String[] who = u.getUserInfo().split(":", 2);
            byte[] login = ("\0" + who[0] + "\0" + who[1]).getBytes(java.nio.charset.StandardCharsets.UTF_8);
            while (e.negotiated() == null) {
                for (amqgen.rabbit.EngineEvent ev : read()) {
                    if (ev instanceof amqgen.rabbit.EngineEvent.MethodReceived m && m.method() instanceof amqgen.rabbit.ConnectionStart) {
                        e.send(0, new amqgen.rabbit.ConnectionStartOk().withMechanism("PLAIN")
                                .withResponse(amqgen.rabbit.Bytes.of(login)).withLocale("en_US"));
                    } else if (ev instanceof amqgen.rabbit.EngineEvent.MethodReceived m && m.method() instanceof amqgen.rabbit.ConnectionTune tune) {
                        e.send(0, new amqgen.rabbit.ConnectionTuneOk(tune.channelMax(), tune.frameMax(), heartbeat));
                        e.send(0, new amqgen.rabbit.ConnectionOpen().withVirtualHost("/"));
                    }
                }
            }
            e.send(1, new amqgen.rabbit.ChannelOpen());
            until(amqgen.rabbit.EngineEvent.ChannelOpened.class);
        }

        /** Writes what is queued, reads once, ticks: the events. */
        java.util.List<amqgen.rabbit.EngineEvent> read() throws java.io.IOException {
            e.writeTo(out);
            int n = in.read(buf);
            if (n < 0) {
                throw new java.io.EOFException();
            }
            e.receive(buf, 0, n);
            e.tick(System.nanoTime());
            java.util.List<amqgen.rabbit.EngineEvent> evs = new java.util.ArrayList<>();
            for (amqgen.rabbit.EngineEvent ev = e.nextEvent(); ev != null; ev = e.nextEvent()) {
                evs.add(ev);
            }
            return evs;
        }

        amqgen.rabbit.Method call(amqgen.rabbit.Method m) throws java.io.IOException {
            e.send(1, m);
            while (true) {
                for (amqgen.rabbit.EngineEvent ev : read()) {
                    if (ev instanceof amqgen.rabbit.EngineEvent.MethodReceived r && r.channel() == 1) {
                        return r.method();
                    }
                }
            }
        }

        void until(Class<?> kind) throws java.io.IOException {
            while (true) {
                for (amqgen.rabbit.EngineEvent ev : read()) {
                    if (kind.isInstance(ev)) {
                        return;
                    }
                }
            }
        }

        /** Reads until {@code count} more publishes are acked. */
        void acked(long count) throws java.io.IOException {
            while (count > 0) {
                for (amqgen.rabbit.EngineEvent ev : read()) {
                    if (ev instanceof amqgen.rabbit.EngineEvent.PublishAcked a) {
                        count -= a.deliveryTags().size();
                    }
                }
            }
        }
    }

    static void floor(String uri, int heartbeat, int each, int pipelined, Meter m) throws Exception {
        Floor f = new Floor(uri, heartbeat);
        try {
            String q1 = ((amqgen.rabbit.QueueDeclareOk) f.call(new amqgen.rabbit.QueueDeclare().withExclusive(true))).queue();
            String q2 = ((amqgen.rabbit.QueueDeclareOk) f.call(new amqgen.rabbit.QueueDeclare().withExclusive(true))).queue();
            f.call(new amqgen.rabbit.ConfirmSelect());
            amqgen.rabbit.BasicProperties props = amqgen.rabbit.BasicProperties.builder()
                    .contentType("application/octet-stream").build();
            amqgen.rabbit.BasicPublish p1 = new amqgen.rabbit.BasicPublish().withRoutingKey(q1);
            m.start();
            for (int i = 0; i < each; i++) {
                f.e.publish(1, p1, props, BODY);
                f.acked(1);
            }
            m.stop("each", each);
            amqgen.rabbit.BasicPublish p2 = new amqgen.rabbit.BasicPublish().withRoutingKey(q2);
            m.start();
            for (int i = 0; i < pipelined; i += BATCH) {
                int k = Math.min(BATCH, pipelined - i);
                for (int j = 0; j < k; j++) {
                    f.e.publish(1, p2, props, BODY);
                }
                f.acked(k);
            }
            m.stop("pipelined", pipelined);
            f.call(new amqgen.rabbit.BasicQos().withPrefetchCount(PREFETCH));
            m.start();
            f.e.send(1, new amqgen.rabbit.BasicConsume().withQueue(q2).withConsumerTag("floor")); // consume-ok: read below
            for (int got = 0; got < pipelined; ) {
                for (amqgen.rabbit.EngineEvent ev : f.read()) {
                    if (ev instanceof amqgen.rabbit.EngineEvent.MessageReceived d) {
                        f.e.send(1, new amqgen.rabbit.BasicAck().withDeliveryTag(((amqgen.rabbit.BasicDeliver) d.method()).deliveryTag()));
                        got++;
                    }
                }
            }
            f.e.writeTo(f.out);
            m.stop("consume", pipelined);
        } finally {
            f.s.close();
        }
    }

    public static void main(String[] args) throws Exception {
        String side = args[0];
        String uri = args[1];
        int heartbeat = Integer.parseInt(args[2]);
        int each = Integer.parseInt(args[3]);
        int pipelined = Integer.parseInt(args[4]);
        int warmups = Integer.parseInt(args[5]);
        for (int round = 0; round <= warmups; round++) {
            int e = each;
            int p = pipelined;
            Meter m = new Meter(side, heartbeat, round == warmups);
            if (side.equals("amqgen")) {
                amqgen(uri, heartbeat, e, p, m);
            } else if (side.equals("floor")) {
                floor(uri, heartbeat, e, p, m);
            } else {
                rabbit(uri, heartbeat, e, p, m);
            }
        }
    }
}
