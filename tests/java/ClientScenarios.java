// The generated blocking client (package amqgen.rabbit) against RabbitMQ: the Python engine's scenario list.
// Usage: java ClientScenarios URI PREFIX. Prints one "OK <scenario>" line per scenario passed; after "READY <port>"
// it waits for a line on stdin (the test closes this connection with rabbitmqctl meanwhile) and checks the
// forced close. Any failure: one line and exit 1.
import amqgen.rabbit.BasicAck;
import amqgen.rabbit.BasicConsume;
import amqgen.rabbit.BasicGet;
import amqgen.rabbit.BasicProperties;
import amqgen.rabbit.BasicPublish;
import amqgen.rabbit.BasicQos;
import amqgen.rabbit.Client;
import amqgen.rabbit.ConfirmSelect;
import amqgen.rabbit.QueueDeclare;
import amqgen.rabbit.QueueDeclareOk;
import amqgen.rabbit.QueueDelete;
import amqgen.rabbit.ReplyException;
import amqgen.rabbit.TxSelect;
import amqgen.rabbit.TxCommit;
import amqgen.rabbit.TxRollback;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

public final class ClientScenarios {
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException(what);
        }
    }

    static byte[] body(int i) {
        int size = i % 100 == 0 ? 300_000 : i % 7; // every 100th over frame_max (131072), some empty
        byte[] b = new byte[size];
        for (int k = 0; k < size; k++) {
            b[k] = (byte) (i * 31 + k);
        }
        return b;
    }

    public static void main(String[] args) throws Exception {
        String uri = args[0];
        String prefix = args[1];
        try {
            run(uri, prefix);
        } catch (RuntimeException | InterruptedException e) {
            System.out.println("FAIL " + e);
            System.exit(1);
        }
    }

    static void run(String uri, String prefix) throws Exception {
        try (Client conn = Client.connect(uri)) {
            check(conn.negotiated().frameMax() == 131072, "frame_max " + conn.negotiated().frameMax());
            Client.Channel a = conn.openChannel();
            Client.Channel b = conn.openChannel();
            Client.Channel c = conn.openChannel();
            check(a.number() == 1 && b.number() == 2 && c.number() == 3, "channel numbers");
            System.out.println("OK three channels");

            // 1,000 confirmed messages, every 100th body over frame_max
            String q = prefix + "-confirm";
            QueueDeclareOk ok = a.queueDeclare(new QueueDeclare().withQueue(q).withExclusive(true));
            check(ok.queue().equals(q) && ok.messageCount() == 0, "declare-ok " + ok);
            a.confirmSelect(new ConfirmSelect());
            for (int i = 0; i < 1000; i++) {
                BasicProperties p = BasicProperties.builder().messageId("m" + i).headers(Map.of("i", i)).build();
                check(a.publish(new BasicPublish().withRoutingKey(q), p, body(i)) == i + 1, "publish seq");
            }
            check(a.waitForConfirms(), "confirms: some nacked");
            System.out.println("OK 1000 confirmed messages");

            // qos and acks: a callback consumer on another channel, prefetch 50, every message acked
            b.basicQos(new BasicQos().withPrefetchCount(50));
            CountDownLatch all = new CountDownLatch(1000);
            AtomicInteger bad = new AtomicInteger();
            AtomicInteger next = new AtomicInteger();
            b.consume(new BasicConsume().withQueue(q), d -> {
                int i = next.getAndIncrement();
                if (!Arrays.equals(d.body(), body(i)) || !d.basicProperties().messageId().equals("m" + i)) {
                    bad.incrementAndGet();
                }
                b.basicAck(new BasicAck().withDeliveryTag(d.deliveryTag()));
                all.countDown();
            });
            check(all.await(60, TimeUnit.SECONDS), "only " + (1000 - all.getCount()) + " delivered");
            check(bad.get() == 0, bad.get() + " messages differ");
            System.out.println("OK qos and acks");

            // get: one message, then get-empty
            String g = prefix + "-get";
            c.queueDeclare(new QueueDeclare().withQueue(g).withExclusive(true));
            c.publish(new BasicPublish().withRoutingKey(g), null, "one".getBytes(StandardCharsets.UTF_8));
            c.flush();
            Client.Delivery d = null;
            for (int tries = 0; d == null && tries < 100; tries++) {
                d = c.get(new BasicGet().withQueue(g).withNoAck(true));
            }
            check(d != null && new String(d.body(), StandardCharsets.UTF_8).equals("one"), "get " + d);
            check(c.get(new BasicGet().withQueue(g).withNoAck(true)) == null, "get-empty");
            System.out.println("OK get");

            // tx: a rolled-back publish is not delivered, a committed one is
            c.txSelect(new TxSelect());
            c.publish(new BasicPublish().withRoutingKey(g), null, "rolled back".getBytes(StandardCharsets.UTF_8));
            c.txRollback(new TxRollback());
            check(c.get(new BasicGet().withQueue(g).withNoAck(true)) == null, "rolled back message delivered");
            c.publish(new BasicPublish().withRoutingKey(g), null, "committed".getBytes(StandardCharsets.UTF_8));
            c.txCommit(new TxCommit());
            Client.Delivery t = c.get(new BasicGet().withQueue(g).withNoAck(true));
            check(t != null && new String(t.body(), StandardCharsets.UTF_8).equals("committed"), "tx commit " + t);
            System.out.println("OK tx");

            // 404 survived: the channel closes, the connection and the other channels go on
            try {
                c.queueDeclare(new QueueDeclare().withQueue(prefix + "-missing").withPassive(true));
                check(false, "passive declare of a missing queue succeeded");
            } catch (Client.ChannelClosedException e) {
                check(e.replyCode() == 404, "reply code " + e.replyCode());
                check(e.reply() instanceof ReplyException.NotFoundException, "typed " + e.reply());
            }
            check(!c.open() && conn.isOpen(), "after 404");
            Client.Channel c2 = conn.openChannel();
            check(c2.number() == 3, "channel 3 reused: " + c2.number());
            c2.queueDeclare(new QueueDeclare().withQueue(g).withPassive(true));
            System.out.println("OK 404 survived");

            // server-sent cancel: the consumer's queue is deleted from another channel
            String s = prefix + "-cancel";
            c2.queueDeclare(new QueueDeclare().withQueue(s));
            Client.Subscription sub = b.consume(new BasicConsume().withQueue(s).withNoAck(true));
            a.queueDelete(new QueueDelete().withQueue(s));
            try { // the iterator says the server ended it: not the false of a consumer cancelled by its own close
                sub.hasNext();
                check(false, "the subscription ended without saying the server cancelled it");
            } catch (Client.ConsumerCancelledException e) {
                check(e.consumerTag().equals(sub.consumerTag()), "cancelled " + e.consumerTag());
            }
            check(b.open(), "channel closed by the cancel");
            System.out.println("OK server-sent cancel");

            a.close();
            check(!a.open() && b.open(), "channel close");
        }
        System.out.println("OK clean close");

        // heartbeats: a 1 s heartbeat and 3.5 s idle; RabbitMQ closes a connection that misses two
        try (Client conn = Client.connect(uri, null, 1)) {
            check(conn.negotiated().heartbeat() == 1, "heartbeat " + conn.negotiated().heartbeat());
            Client.Channel ch = conn.openChannel();
            Thread.sleep(3500);
            ch.queueDeclare(new QueueDeclare().withExclusive(true));
            System.out.println("OK heartbeats");
        }

        // forced close: the test closes this connection with rabbitmqctl close_connection
        Client conn = Client.connect(uri);
        Client.Channel ch = conn.openChannel();
        System.out.println("READY " + conn.localAddress().getPort());
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        try {
            for (int i = 0; i < 100; i++) {
                ch.queueDeclare(new QueueDeclare().withExclusive(true));
                Thread.sleep(50);
            }
            check(false, "still open after close_connection");
        } catch (Client.ConnectionClosedException e) {
            check(e.replyCode() == 320, "forced close reply code " + e.replyCode() + " " + e.getMessage());
        }
        check(!conn.isOpen(), "isOpen after forced close");
        conn.close();
        System.out.println("OK forced close");
    }
}
