// The generated blocking client (package amqgen.rabbit) where issue 41 found it wanting, against RabbitMQ and a
// silent server of its own. Usage: java ClientFaults URI PREFIX. One "OK <check>" line per check passed; after
// "READY <port>" it waits for a line on stdin (the test closes that connection with rabbitmqctl meanwhile). Any
// failure: one "FAIL" line and exit 1.
//
// - connect timeouts (defect 22): a server that accepts and never answers ends connect with ConnectTimeoutException
//   after the timeout set (Options, the URI's connection_timeout) or the default 10 s, with no descriptor left open;
//   the URI's query parameters win over the options, an unknown one is refused;
// - confirms (defect 20): waitForConfirms after confirmed publishes to a missing exchange throws the 404 with the
//   publishes left unconfirmed;
// - the iterator's ends (defect 21): its own close (false; what it held goes back to the queue), the server's
//   cancel (ConsumerCancelledException), its channel closed (ChannelClosedException), a forced close of the
//   connection (ConnectionClosedException 320, the close listener told);
// - callbacks run on the dispatch thread and may make synchronous calls; a callback that takes 3.5 s does not stop
//   a 1 s heartbeat; the acks a callback sends leave while a later callback still runs.
import amqgen.rabbit.BasicAck;
import amqgen.rabbit.BasicConsume;
import amqgen.rabbit.BasicPublish;
import amqgen.rabbit.BasicQos;
import amqgen.rabbit.Client;
import amqgen.rabbit.ConfirmSelect;
import amqgen.rabbit.QueueDeclare;
import amqgen.rabbit.QueueDelete;
import amqgen.rabbit.ReplyException;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

public final class ClientFaults {
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException(what);
        }
    }

    static int fds() {
        String[] names = new File("/proc/self/fd").list();
        return names == null ? -1 : names.length;
    }

    public static void main(String[] args) throws Exception {
        try {
            run(args[0], args[1]);
        } catch (RuntimeException | InterruptedException e) {
            System.out.println("FAIL " + e);
            e.printStackTrace();
            System.exit(1);
        }
    }

    /** Seconds a connect to the silent server took to fail with ConnectTimeoutException. */
    static double timedOut(String uri, Client.Options options) {
        long t0 = System.nanoTime();
        try {
            Client.connect(uri, options).close();
            check(false, "connected to a server that never answers: " + uri);
        } catch (Client.ConnectTimeoutException e) {
            return (System.nanoTime() - t0) / 1e9;
        }
        return -1;
    }

    static void run(String uri, String prefix) throws Exception {
        // the JVM's own one-time descriptors first (NIO's pre-close socket, the epoll selector's classes)
        try {
            Client.connect("amqp://127.0.0.1:1").close();
        } catch (Client.ConnectFailedException expected) {
            check(expected.getCause() instanceof java.net.ConnectException, "cause " + expected.getCause());
        }
        timeouts(uri);
        confirms(uri, prefix);
        try (Client conn = Client.connect(uri)) {
            iteratorEnds(conn, prefix);
            callbacks(conn, uri, prefix);
        }
        forcedClose(uri, prefix);
    }

    static void timeouts(String uri) throws Exception {
        List<Socket> accepted = java.util.Collections.synchronizedList(new ArrayList<>());
        try (ServerSocket silent = new ServerSocket(0)) {
            Thread acceptor = new Thread(() -> {
                try {
                    while (true) {
                        accepted.add(silent.accept()); // and never a word
                    }
                } catch (java.io.IOException closed) {
                    // the test is over
                }
            });
            acceptor.setDaemon(true);
            acceptor.start();
            int before = fds();
            String at = "amqp://127.0.0.1:" + silent.getLocalPort();
            double[] byDefault = {0};
            Thread slow = new Thread(() -> byDefault[0] = timedOut(at, new Client.Options()));
            slow.start();
            double set = timedOut(at, new Client.Options().connectionTimeout(Duration.ofSeconds(1)));
            check(set >= 0.9 && set < 4, "a 1 s connection timeout ended after " + set + " s");
            double query = timedOut(at + "?connection_timeout=1500", new Client.Options().connectionTimeout(Duration.ofSeconds(30)));
            check(query >= 1.4 && query < 4.5, "connection_timeout=1500 (over the options' 30 s) ended after " + query + " s");
            slow.join(20_000);
            check(byDefault[0] >= 9.5 && byDefault[0] < 14, "the default connection timeout ended after " + byDefault[0] + " s");
            int after = -1;
            for (int i = 0; i < 100 && after != before; i++) { // (the acceptor thread may still be adding one)
                synchronized (accepted) {
                    for (Socket s : accepted) { // the silent server's side of each (in this process too)
                        s.close();
                    }
                }
                after = fds();
                if (after != before) {
                    Thread.sleep(10);
                }
            }
            check(after == before, "descriptors after three timed-out connects: " + after + ", before " + before);
        }
        try (Client c = Client.connect(uri + "?heartbeat=3&name=amqgen-client-faults",
                new Client.Options().heartbeat(7))) {
            check(c.negotiated().heartbeat() == 3, "heartbeat " + c.negotiated().heartbeat() + ": the URI's 3 wins");
        }
        try {
            Client.connect(uri + "?heartbeet=3");
            check(false, "an unknown query parameter was taken");
        } catch (IllegalArgumentException e) {
            check(e.getMessage().contains("heartbeet"), e.getMessage());
        }
        System.out.println("OK connect timeouts");
    }

    static void confirms(String uri, String prefix) {
        try (Client conn = Client.connect(uri)) {
            Client.Channel ch = conn.openChannel();
            ch.confirmSelect(new ConfirmSelect());
            BasicPublish missing = new BasicPublish().withExchange(prefix + "-missing").withRoutingKey("k");
            for (int i = 0; i < 3; i++) {
                check(ch.publish(missing, null, new byte[] {(byte) i}) == i + 1, "sequence numbers");
            }
            try {
                ch.waitForConfirms();
                check(false, "waitForConfirms returned after publishes to a missing exchange");
            } catch (Client.ChannelClosedException e) {
                check(e.replyCode() == 404 && e.reply() instanceof ReplyException.NotFoundException && e.byServer()
                        && e.channel() == ch.number(), "closed by " + e);
                check(e.unconfirmed().equals(List.of(1L, 2L, 3L)), "unconfirmed " + e.unconfirmed());
                try {
                    ch.waitForConfirms();
                    check(false, "a second wait on the closed channel returned");
                } catch (Client.ChannelClosedException again) {
                    check(again.unconfirmed().equals(List.of(1L, 2L, 3L)), "again " + again.unconfirmed());
                }
            }
            Client.Channel next = conn.openChannel();
            next.confirmSelect(new ConfirmSelect());
            String q = next.queueDeclare(new QueueDeclare().withExclusive(true)).queue();
            next.publish(new BasicPublish().withRoutingKey(q), null, new byte[1]);
            check(next.waitForConfirms() && conn.isOpen(), "the connection after the 404");
        }
        System.out.println("OK confirms end with the 404 and the unconfirmed publishes");
    }

    static int ready(Client conn, String queue) {
        Client.Channel ch = conn.openChannel();
        try {
            return (int) ch.queueDeclare(new QueueDeclare().withQueue(queue).withPassive(true)).messageCount();
        } finally {
            ch.close();
        }
    }

    static void iteratorEnds(Client conn, String prefix) throws InterruptedException {
        Client.Channel ch = conn.openChannel();
        String q = ch.queueDeclare(new QueueDeclare().withQueue(prefix + "-ends").withExclusive(true)).queue();
        for (int i = 0; i < 3; i++) {
            ch.publish(new BasicPublish().withRoutingKey(q), null, new byte[] {(byte) i});
        }
        ch.flush();
        // its own close: false, and what arrived but was not taken goes back to the queue
        Client.Subscription own = ch.consume(new BasicConsume().withQueue(q));
        Client.Delivery first = own.next();
        ch.basicAck(new BasicAck().withDeliveryTag(first.deliveryTag()));
        for (int i = 0; i < 200 && ready(conn, q) > 0; i++) { // the other two arrive: the consumer holds them
            Thread.sleep(10);
        }
        own.close();
        check(!own.hasNext(), "hasNext after close");
        int back = 0;
        for (int i = 0; i < 200 && (back = ready(conn, q)) < 2; i++) {
            Thread.sleep(10);
        }
        check(back == 2, back + " messages back in the queue after the iterator's close, not 2");

        // the server's cancel: ConsumerCancelledException, the channel goes on
        Client.Subscription cancelled = ch.consume(new BasicConsume().withQueue(q).withNoAck(true));
        Client.Channel other = conn.openChannel();
        other.queueDelete(new QueueDelete().withQueue(q));
        int handed = 0;
        try {
            while (cancelled.hasNext()) { // the two given back come first
                cancelled.next();
                handed++;
            }
            check(false, "the iterator ended as if cancelled by its own close");
        } catch (Client.ConsumerCancelledException e) {
            check(e.consumerTag().equals(cancelled.consumerTag()) && ch.open(), "cancelled " + e);
        }
        check(handed <= 2, handed + " deliveries");

        // its channel closed (a 404 on the same channel): ChannelClosedException
        String q2 = ch.queueDeclare(new QueueDeclare().withQueue(prefix + "-ends2").withExclusive(true)).queue();
        Client.Subscription channelEnds = ch.consume(new BasicConsume().withQueue(q2));
        Client.ChannelClosedException thrown = null;
        try {
            ch.queueDeclare(new QueueDeclare().withQueue(prefix + "-no-such-queue").withPassive(true));
        } catch (Client.ChannelClosedException e) {
            thrown = e;
        }
        check(thrown != null && thrown.replyCode() == 404, "passive declare of a missing queue: " + thrown);
        try {
            channelEnds.hasNext();
            check(false, "the iterator ended quietly when its channel closed");
        } catch (Client.ChannelClosedException e) {
            check(e == thrown, "the iterator threw " + e + ", its channel's call " + thrown);
        }
        other.close();
        System.out.println("OK iterator ends: own close, server cancel, channel closed");
    }

    static void callbacks(Client conn, String uri, String prefix) throws InterruptedException {
        // the dispatch thread, and a synchronous call from a callback
        Client.Channel ch = conn.openChannel();
        String q = ch.queueDeclare(new QueueDeclare().withQueue(prefix + "-cb").withExclusive(true)).queue();
        AtomicReference<String> where = new AtomicReference<>();
        AtomicReference<Object> inside = new AtomicReference<>();
        CountDownLatch ran = new CountDownLatch(1);
        Client.Channel side = conn.openChannel();
        ch.consume(new BasicConsume().withQueue(q).withNoAck(true), d -> {
            where.set(Thread.currentThread().getName());
            try {
                inside.set(side.queueDeclare(new QueueDeclare().withQueue(q).withPassive(true)).queue());
            } catch (RuntimeException e) {
                inside.set(e);
            }
            ran.countDown();
        });
        ch.publish(new BasicPublish().withRoutingKey(q), null, new byte[1]);
        ch.flush();
        check(ran.await(10, TimeUnit.SECONDS), "the callback did not run");
        check(where.get().startsWith("amqgen-dispatch"), "the callback ran on " + where.get());
        check(q.equals(inside.get()), "a synchronous call from a callback: " + inside.get());
        System.out.println("OK callbacks on the dispatch thread, synchronous calls in them");

        // a callback that takes 3.5 s with a 1 s heartbeat: the I/O thread keeps the connection alive
        try (Client beat = Client.connect(uri, new Client.Options().heartbeat(1))) {
            check(beat.negotiated().heartbeat() == 1, "heartbeat " + beat.negotiated().heartbeat());
            Client.Channel b = beat.openChannel();
            String bq = b.queueDeclare(new QueueDeclare().withExclusive(true)).queue();
            CountDownLatch slept = new CountDownLatch(1);
            b.consume(new BasicConsume().withQueue(bq).withNoAck(true), d -> {
                try {
                    Thread.sleep(3500);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                slept.countDown();
            });
            b.publish(new BasicPublish().withRoutingKey(bq), null, new byte[1]);
            b.flush();
            check(slept.await(10, TimeUnit.SECONDS), "the slow callback did not end");
            b.queueDeclare(new QueueDeclare().withQueue(bq).withPassive(true));
            check(beat.isOpen(), "the connection after a 3.5 s callback");
        }
        System.out.println("OK a slow callback does not stop heartbeats");

        // prefetch 2, three messages: the first callback acks, then waits; its ack must reach the broker (which
        // then delivers the third) while it waits, though the second delivery is queued behind it
        Client.Channel a = conn.openChannel();
        // (not exclusive: the watcher, another connection, reads its depth; deleted at the end)
        String aq = a.queueDeclare(new QueueDeclare().withQueue(prefix + "-acks")).queue();
        a.basicQos(new BasicQos().withPrefetchCount(2));
        for (int i = 0; i < 3; i++) {
            a.publish(new BasicPublish().withRoutingKey(aq), null, new byte[] {(byte) i});
        }
        a.flush();
        for (int i = 0; i < 200 && ready(conn, aq) < 3; i++) {
            Thread.sleep(10);
        }
        int[] readyWhileWaiting = {-1};
        CountDownLatch all = new CountDownLatch(3);
        try (Client watcher = Client.connect(uri)) {
            a.consume(new BasicConsume().withQueue(aq), d -> {
                a.basicAck(new BasicAck().withDeliveryTag(d.deliveryTag()));
                if (d.deliveryTag() == 1) {
                    int left = -1;
                    for (int i = 0; i < 300 && left != 0; i++) { // the third is delivered once our ack is in
                        left = passiveReady(watcher, aq);
                        if (left != 0) {
                            try {
                                Thread.sleep(10);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                        }
                    }
                    readyWhileWaiting[0] = left;
                }
                all.countDown();
            });
            check(all.await(20, TimeUnit.SECONDS), "not all three delivered");
        }
        conn.openChannel().queueDelete(new QueueDelete().withQueue(aq));
        check(readyWhileWaiting[0] == 0, readyWhileWaiting[0] + " ready while the first callback waited after its ack");
        System.out.println("OK a callback's ack leaves while a later callback is queued");
    }

    /** From another connection: the queue's ready messages (a passive declare's message count). */
    static int passiveReady(Client other, String queue) {
        return ready(other, queue);
    }

    static void forcedClose(String uri, String prefix) throws Exception {
        Client conn = Client.connect(uri);
        CountDownLatch told = new CountDownLatch(1);
        int[] code = {0};
        conn.addCloseListener(e -> {
            code[0] = e instanceof Client.ConnectionClosedException c ? c.replyCode() : -1;
            told.countDown();
        });
        Client.Channel ch = conn.openChannel();
        String q = ch.queueDeclare(new QueueDeclare().withQueue(prefix + "-forced").withExclusive(true)).queue();
        Client.Subscription sub = ch.consume(new BasicConsume().withQueue(q));
        System.out.println("READY " + conn.localAddress().getPort());
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        try {
            sub.hasNext();
            check(false, "the iterator ended quietly on a forced close");
        } catch (Client.ConnectionClosedException e) {
            check(e.replyCode() == 320 && e.byServer(), "forced close: " + e);
        }
        check(told.await(10, TimeUnit.SECONDS) && code[0] == 320, "the close listener got " + code[0]);
        conn.close(); // ended already: returns quietly
        System.out.println("OK forced close ends the iterator with 320");
    }
}
