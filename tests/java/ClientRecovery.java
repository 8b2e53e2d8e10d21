// What the fault matrix's recovery rows do not look at, checked as a user of Client.connectRecovering meets it
// (docs/recovery.md): channel numbers and tx mode kept, an exchange-to-exchange binding and auto-delete exchanges
// replayed in order, a server-named queue that outlives its connection kept with its message, topology deleted
// through the client not redeclared, a consumer the application cancelled not registered again, and a call made
// while recovery runs waiting for it, and a publish returned (unroutable, no onReturn callback) before the cut reported
// by the first waitForConfirms after it, once, not republished. Usage: java ClientRecovery PROXY_URI PREFIX; it prints CUT when the caller
// (tests/test_java_recovery.py) is to refuse connections for a second and reset the open ones, and reads "go" once
// it has; then an OK line per check, or a FAIL line and exit status 1.
import amqgen.rabbit.BasicConsume;
import amqgen.rabbit.BasicPublish;
import amqgen.rabbit.Client;
import amqgen.rabbit.ConfirmSelect;
import amqgen.rabbit.ExchangeBind;
import amqgen.rabbit.ExchangeDeclare;
import amqgen.rabbit.ExchangeDelete;
import amqgen.rabbit.QueueBind;
import amqgen.rabbit.QueueDeclare;
import amqgen.rabbit.QueueDeclareOk;
import amqgen.rabbit.QueueDelete;
import amqgen.rabbit.TxCommit;
import amqgen.rabbit.TxSelect;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

public final class ClientRecovery {
    static void check(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAIL " + what);
            System.exit(1);
        }
    }

    static byte[] text(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** The reply code of the channel error {@code r} ends in, or 0 when it worked. */
    static int refused(Runnable r) {
        try {
            r.run();
            return 0;
        } catch (Client.ChannelClosedException e) {
            return e.replyCode();
        }
    }

    public static void main(String[] args) throws Exception {
        String uri = args[0];
        String prefix = args[1];
        LinkedBlockingQueue<String> notices = new LinkedBlockingQueue<>();
        Client.RecoveryPolicy policy = new Client.RecoveryPolicy().initialDelay(Duration.ofMillis(100))
                .maxDelay(Duration.ofSeconds(1)).listener(new Client.RecoveryListener() {
                    @Override
                    public void recovered() {
                        notices.add("recovered");
                    }

                    @Override
                    public void failed(Client.RecoveryFailedException e) {
                        notices.add("failed " + e.getCause());
                    }
                });
        Client.Recovering conn = Client.connectRecovering(uri, new Client.Options().heartbeat(10), policy);
        Client.RecoveringChannel ch1 = conn.openChannel();
        Client.RecoveringChannel ch2 = conn.openChannel();
        Client.RecoveringChannel ch3 = conn.openChannel();
        check(ch1.number() == 1 && ch2.number() == 2 && ch3.number() == 3, "channels 1, 2, 3 at first");
        Client.RecoveringChannel ch4 = conn.openChannel(); // (before 2 closes: 2 stays the lowest free number)
        ch2.close();
        ch3.txSelect(new TxSelect());

        String src = prefix + ".src";
        String dst = prefix + ".dst";
        ch1.exchangeDeclare(new ExchangeDeclare().withExchange(src).withType("direct").withAutoDelete(true));
        ch1.exchangeDeclare(new ExchangeDeclare().withExchange(dst).withType("direct").withAutoDelete(true));
        ch1.exchangeBind(new ExchangeBind().withDestination(dst).withSource(src).withRoutingKey("k"));
        // exclusive: it goes with the connection, and with it the bindings that keep the auto-delete exchanges
        String hop = ch1.queueDeclare(new QueueDeclare().withQueue("").withExclusive(true)).queue();
        ch1.queueBind(new QueueBind().withQueue(hop).withExchange(dst).withRoutingKey("k"));
        LinkedBlockingQueue<Client.Delivery> hops = new LinkedBlockingQueue<>();
        ch1.consume(new BasicConsume().withQueue(hop), hops::add);

        String kept = ch1.queueDeclare(new QueueDeclare().withQueue("")).queue(); // outlives the connection
        ch1.publish(new BasicPublish().withRoutingKey(kept), null, text("kept"));

        String goneX = prefix + ".gone.x";
        String goneQ = prefix + ".gone.q";
        ch1.exchangeDeclare(new ExchangeDeclare().withExchange(goneX).withType("fanout"));
        ch1.exchangeDelete(new ExchangeDelete().withExchange(goneX));
        ch1.queueDeclare(new QueueDeclare().withQueue(goneQ));
        ch1.queueDelete(new QueueDelete().withQueue(goneQ));

        String named = prefix + ".c";
        ch1.queueDeclare(new QueueDeclare().withQueue(named));
        ch1.consume(new BasicConsume().withQueue(named)).close(); // cancelled by the application

        // returned before the cut (the declare-ok after it comes after its return and ack), told after the recovery
        ch4.confirmSelect(new ConfirmSelect());
        ch4.publish(new BasicPublish().withExchange(src).withRoutingKey("nowhere").withMandatory(true), null,
                text("bounced"));
        ch4.queueDeclare(new QueueDeclare().withQueue(named).withPassive(true));

        System.out.println("CUT");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        check("go".equals(in.readLine()), "the caller's go");
        // made while recovery runs (connections are refused for a second): it waits, then works
        QueueDeclareOk during = ch1.queueDeclare(new QueueDeclare().withQueue(named).withPassive(true));
        check(conn.recoveries() == 1, "a call made during the recovery returned after it, " + conn.recoveries());
        System.out.println("OK a call made during recovery waited for it");
        String n = notices.poll(30, TimeUnit.SECONDS);
        check("recovered".equals(n), "the recovered notification, not " + n);

        check(during.consumerCount() == 0, "the cancelled consumer came back: " + during.consumerCount());
        System.out.println("OK a consumer the application cancelled is not registered again");

        try {
            ch4.waitForConfirms();
            check(false, "a publish returned before the cut was counted as confirmed");
        } catch (Client.PublishNotConfirmedException e) {
            check(e.returned().size() == 1 && e.messages().size() == 1
                    && Arrays.equals(e.messages().get(0).body(), text("bounced"))
                    && e.returned().get(0).method().replyCode() == 312, "reported " + e.messages() + " " + e.returned());
        }
        check(ch4.number() == 4 && ch4.waitForConfirms(), "told once, channel 4 goes on");
        System.out.println("OK a publish returned before the cut reported after it, once");

        check(ch1.number() == 1 && ch3.number() == 3 && ch1.open() && ch3.open(), "channels 1 and 3 reopened");
        Client.RecoveringChannel again = conn.openChannel();
        check(again.number() == 2, "the lowest free number after recovery is 2, not " + again.number());
        ch3.publish(new BasicPublish().withRoutingKey(named), null, text("tx"));
        check(refused(() -> ch3.txCommit(new TxCommit())) == 0, "tx.commit on channel 3 (tx.select replayed)");
        System.out.println("OK channels reopened with their numbers, tx mode replayed");

        ch1.publish(new BasicPublish().withExchange(src).withRoutingKey("k"), null, text("hop"));
        Client.Delivery d = hops.poll(10, TimeUnit.SECONDS);
        check(d != null && Arrays.equals(d.body(), text("hop")), "a publish to the source exchange reached the "
                + "exclusive queue through the exchange binding: " + d);
        check(!conn.currentName(hop).equals(hop), "the exclusive server-named queue was named anew");
        System.out.println("OK auto-delete exchanges, an exchange binding and a renamed queue's binding replayed");

        check(conn.currentName(kept).equals(kept), "the server-named queue that outlives its connection kept its "
                + "name, not " + conn.currentName(kept));
        QueueDeclareOk k = again.queueDeclare(new QueueDeclare().withQueue(kept).withPassive(true));
        check(k.messageCount() == 1, "it kept its message: " + k.messageCount());
        System.out.println("OK a server-named queue that outlives its connection kept with its message");

        check(refused(() -> conn.openChannel().exchangeDeclare(new ExchangeDeclare().withExchange(goneX)
                .withType("fanout").withPassive(true))) == 404, "the deleted exchange was declared again");
        check(refused(() -> conn.openChannel().queueDeclare(new QueueDeclare().withQueue(goneQ).withPassive(true)))
                == 404, "the deleted queue was declared again");
        System.out.println("OK topology deleted through the client is not declared again");

        again.queueDelete(new QueueDelete().withQueue(kept));
        again.queueDelete(new QueueDelete().withQueue(named));
        conn.close();
        check(conn.recoveries() == 1 && !conn.isOpen(), "one recovery, closed");
        System.out.println("OK closed");
    }
}
