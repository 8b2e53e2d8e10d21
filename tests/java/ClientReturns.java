// The generated blocking client (package amqgen.rabbit) against RabbitMQ: AMQPLAIN login and returned publishes.
// Usage: java ClientReturns URI PREFIX. Logs in with AMQPLAIN, prints "READY <local port>" and waits for a line on
// stdin (the test reads the connection's mechanism with rabbitmqctl meanwhile); then, on a confirming channel,
// mandatory publishes to an exchange with no binding (returned) and to a queue (not returned); callbacks that throw
// (a consumer's, onReturn's: each closes its channel, the exception the cause of what its calls throw after, the
// connection usable); a returned publish without an onReturn callback is not confirmed (docs/recovery.md):
// waitForConfirms throws PublishNotConfirmedException listing it, on a channel and on a recovering channel, and a
// callback set afterwards takes the next one; then AMQPLAIN with a wrong password. One "OK ..." line per check; any failure: one line and
// exit 1.
import amqgen.rabbit.BasicConsume;
import amqgen.rabbit.BasicGet;
import amqgen.rabbit.BasicProperties;
import amqgen.rabbit.BasicPublish;
import amqgen.rabbit.Client;
import amqgen.rabbit.ConfirmSelect;
import amqgen.rabbit.ExchangeDeclare;
import amqgen.rabbit.ExchangeDelete;
import amqgen.rabbit.QueueDeclare;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

public final class ClientReturns {
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException(what);
        }
    }

    public static void main(String[] args) throws Exception {
        try {
            run(args[0], args[1]);
        } catch (RuntimeException e) {
            System.out.println("FAIL " + e);
            System.exit(1);
        }
    }

    static void run(String uri, String prefix) throws Exception {
        try (Client conn = Client.connect(uri, null, 60, "AMQPLAIN")) {
            System.out.println("READY " + conn.localAddress().getPort());
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
            Client.Channel ch = conn.openChannel();
            String ex = prefix + "-nowhere";
            ch.exchangeDeclare(new ExchangeDeclare().withExchange(ex).withType("direct").withAutoDelete(true));
            try {
                returns(ch, ex, prefix);
                returnsWithoutCallback(conn, ex, prefix);
                recoveringReturns(uri, ex, prefix);
                throwingCallbacks(conn, ex, prefix);
            } finally { // auto-delete goes with the last binding, and this exchange never has one
                if (ch.open()) {
                    ch.exchangeDelete(new ExchangeDelete().withExchange(ex));
                }
            }
        }
        String wrong = uri.replaceFirst("//([^:@/]+):[^@/]*@", "//$1:wrong-" + prefix + "@");
        check(!wrong.equals(uri), "the URI names no password: " + uri);
        try {
            Client.connect(wrong, null, 60, "AMQPLAIN").close();
            check(false, "a wrong password was accepted");
        } catch (Client.ConnectionClosedException e) {
            System.out.println("OK refused " + e.replyCode());
        }
    }

    /** Waits (at most 10 s) for the dispatch thread to close a channel whose callback threw. */
    static void awaitClosed(Client.Channel ch) throws InterruptedException {
        for (int i = 0; i < 1000 && ch.open(); i++) {
            Thread.sleep(10);
        }
        check(!ch.open(), "channel " + ch.number() + " still open after its callback threw");
    }

    /** A call on a channel a callback closed: ChannelClosedException, 200, the callback's exception its cause. */
    static void closedBy(Client.Channel ch, RuntimeException thrown, String what) {
        try {
            ch.queueDeclare(new QueueDeclare().withQueue("").withExclusive(true));
            check(false, "a call on the channel " + what + " closed did not throw");
        } catch (Client.ChannelClosedException e) {
            check(e.getCause() == thrown && e.replyCode() == 200
                    && e.replyText().equals("closed by the client: the " + what + " callback threw "
                            + thrown.getClass().getName()), "closed by " + e + " cause " + e.getCause());
        }
    }

    static void throwingCallbacks(Client conn, String ex, String prefix) throws InterruptedException {
        // a consumer callback that throws on its first delivery: its channel closes, the dispatch thread goes on
        Client.Channel a = conn.openChannel();
        String q = a.queueDeclare(new QueueDeclare().withQueue(prefix + "-throws").withExclusive(true)).queue();
        RuntimeException boom = new IllegalStateException("from the consumer");
        int[] calls = {0};
        a.consume(new BasicConsume().withQueue(q), d -> {
            calls[0]++;
            throw boom;
        });
        for (int i = 0; i < 3; i++) {
            a.publish(new BasicPublish().withRoutingKey(q), null, new byte[] {(byte) i});
        }
        a.flush();
        awaitClosed(a);
        closedBy(a, boom, "consumer");
        check(calls[0] == 1, "the callback ran " + calls[0] + " times after it threw");
        a.close(); // closed already: returns at once
        System.out.println("OK consumer callback threw: its channel closed, the cause kept");

        // onReturn that throws: its confirming channel closes; waitForConfirms does not hang: the broker's ack
        // after the return counts when it was read before our close (true), else the publish ends unconfirmed at
        // the close-ok (false), or the wait wakes to the channel's end (thrown)
        Client.Channel b = conn.openChannel();
        RuntimeException bad = new UnsupportedOperationException("from onReturn");
        b.onReturn(r -> {
            throw bad;
        });
        b.confirmSelect(new ConfirmSelect());
        b.publish(new BasicPublish().withExchange(ex).withRoutingKey("k").withMandatory(true), null, new byte[] {9});
        try {
            b.waitForConfirms();
        } catch (Client.ChannelClosedException e) {
            check(e.getCause() == bad, "waitForConfirms ended by " + e);
        }
        awaitClosed(b);
        closedBy(b, bad, "onReturn");
        System.out.println("OK onReturn threw: its channel closed, the cause kept");

        // the connection goes on: a new channel, the messages the first consumer never acked requeued to it
        Client.Channel c = conn.openChannel();
        c.publish(new BasicPublish().withRoutingKey(q), null, new byte[] {7});
        int got = 0; // (the broker requeues channel a's three as it closes it: a get may come first, so retried)
        for (int i = 0; i < 500 && got < 4; i++) {
            if (c.get(new BasicGet().withQueue(q).withNoAck(true)) != null) {
                got++;
            } else {
                Thread.sleep(10);
            }
        }
        check(got == 4 && c.get(new BasicGet().withQueue(q).withNoAck(true)) == null && conn.isOpen(),
                "got " + got + " messages back on a new channel");
        c.close();
        System.out.println("OK connection usable after both: " + got + " messages got back");
    }

    /** The exception's one returned publish: the body, where it went, the return's tag and reply code. */
    static void oneReturned(Client.PublishNotConfirmedException e, String ex, long tag, byte body, String what) {
        check(e.returned().size() == 1 && e.messages().size() == 1, what + ": " + e.returned() + " " + e.messages());
        Client.Returned r = e.returned().get(0);
        check(r.deliveryTag() == tag && r.method().replyCode() == 312 && r.method().exchange().equals(ex)
                && r.method().routingKey().equals("k"), what + ": returned " + r);
        Client.Unconfirmed u = e.messages().get(0);
        check(u.body().length == 3 && u.body()[0] == body && u.method() instanceof BasicPublish bp
                && bp.exchange().equals(ex) && bp.routingKey().equals("k"), what + ": message " + u);
    }

    static void returnsWithoutCallback(Client conn, String ex, String prefix) {
        Client.Channel ch = conn.openChannel();
        String q = ch.queueDeclare(new QueueDeclare().withQueue(prefix + "-nocb").withExclusive(true)).queue();
        ch.confirmSelect(new ConfirmSelect());
        ch.publish(new BasicPublish().withRoutingKey(q).withMandatory(true), null, new byte[] {1});
        long lost = ch.publish(new BasicPublish().withExchange(ex).withRoutingKey("k").withMandatory(true), null,
                new byte[] {5, 5, 5});
        ch.publish(new BasicPublish().withRoutingKey(q).withMandatory(true), null, new byte[] {3});
        try {
            ch.waitForConfirms();
            check(false, "a returned publish without onReturn was counted as confirmed");
        } catch (Client.PublishNotConfirmedException e) {
            oneReturned(e, ex, lost, (byte) 5, "no callback");
        }
        // told once; the channel goes on, and with a callback a return is the callback's, not a confirm failure
        check(ch.open() && ch.waitForConfirms(), "the channel after the exception");
        List<Client.Returned> returned = new ArrayList<>();
        ch.onReturn(returned::add);
        long again = ch.publish(new BasicPublish().withExchange(ex).withRoutingKey("k").withMandatory(true), null,
                new byte[] {6, 6, 6});
        check(ch.waitForConfirms() && returned.size() == 1 && returned.get(0).deliveryTag() == again,
                "with a callback: " + returned);
        ch.close();
        // returned, then the channel ends before a wait told it: its end lists it among the unconfirmed
        Client.Channel c2 = conn.openChannel();
        c2.confirmSelect(new ConfirmSelect());
        c2.publish(new BasicPublish().withExchange(ex).withRoutingKey("k").withMandatory(true), null, new byte[] {4});
        c2.publish(new BasicPublish().withExchange(prefix + "-missing").withRoutingKey("k"), null, new byte[] {4});
        try {
            c2.waitForConfirms();
            check(false, "a publish to a missing exchange was confirmed");
        } catch (Client.ChannelClosedException e) {
            check(e.replyCode() == 404 && e.unconfirmed().equals(List.of(1L, 2L)), "closed by " + e + " unconfirmed "
                    + e.unconfirmed());
        }
        System.out.println("OK returned without a callback: not confirmed, tag " + lost);
    }

    static void recoveringReturns(String uri, String ex, String prefix) {
        try (Client.Recovering conn = Client.connectRecovering(uri, new Client.Options().heartbeat(60),
                new Client.RecoveryPolicy())) {
            Client.RecoveringChannel ch = conn.openChannel();
            ch.confirmSelect(new ConfirmSelect());
            long lost = ch.publish(new BasicPublish().withExchange(ex).withRoutingKey("k").withMandatory(true), null,
                    new byte[] {7, 7, 7});
            try {
                ch.waitForConfirms();
                check(false, "a returned publish without onReturn was counted as confirmed (recovering)");
            } catch (Client.PublishNotConfirmedException e) {
                oneReturned(e, ex, lost, (byte) 7, "recovering, no callback");
                check(((BasicPublish) e.messages().get(0).method()).mandatory(), "not the publish itself");
            }
            check(ch.open() && ch.waitForConfirms(), "the recovering channel after the exception");
            List<Client.Returned> returned = new ArrayList<>();
            ch.onReturn(returned::add);
            ch.publish(new BasicPublish().withExchange(ex).withRoutingKey("k").withMandatory(true), null,
                    new byte[] {8, 8, 8});
            check(ch.waitForConfirms() && returned.size() == 1, "recovering, with a callback: " + returned);
        }
        System.out.println("OK recovering channel: returned without a callback not confirmed, with one the callback's");
    }

    static void returns(Client.Channel ch, String ex, String prefix) {
        String q = ch.queueDeclare(new QueueDeclare().withQueue(prefix + "-q").withExclusive(true)).queue();
        List<Client.Returned> returned = new ArrayList<>();
        ch.onReturn(returned::add); // the dispatch thread adds, before waitForConfirms returns (it waits for that)
        ch.confirmSelect(new ConfirmSelect());
        BasicProperties p = BasicProperties.builder().messageId("m2").build();
        long routed1 = ch.publish(new BasicPublish().withRoutingKey(q).withMandatory(true), null, new byte[] {1});
        long lost = ch.publish(new BasicPublish().withExchange(ex).withRoutingKey("k").withMandatory(true), p,
                new byte[] {2, 2});
        long routed2 = ch.publish(new BasicPublish().withRoutingKey(q).withMandatory(true), null, new byte[] {3});
        check(routed1 == 1 && lost == 2 && routed2 == 3, "sequence numbers " + routed1 + lost + routed2);
        check(ch.waitForConfirms(), "a returned publish is still acked by RabbitMQ");
        check(returned.size() == 1, "returned " + returned.size());
        Client.Returned r = returned.get(0);
        check(r.deliveryTag() == lost && r.channel() == ch.number(), "tag " + r.deliveryTag());
        check(r.method().exchange().equals(ex) && r.method().routingKey().equals("k"), "where " + r.method());
        check(r.body().length == 2 && r.body()[0] == 2, "body");
        check("m2".equals(r.properties() instanceof BasicProperties bp ? bp.messageId() : null), "props");
        System.out.println("OK returned " + r.deliveryTag() + " " + r.method().replyCode() + " "
                + r.method().replyText());
    }
}
