// The generated blocking client (package amqgen.rabbit) against RabbitMQ: AMQPLAIN login and returned publishes.
// Usage: java ClientReturns URI PREFIX. Logs in with AMQPLAIN, prints "READY <local port>" and waits for a line on
// stdin (the test reads the connection's mechanism with rabbitmqctl meanwhile); then, on a confirming channel,
// mandatory publishes to an exchange with no binding (returned) and to a queue (not returned); then AMQPLAIN with a
// wrong password. One "OK ..." line per check; any failure: one line and exit 1.
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

    static void returns(Client.Channel ch, String ex, String prefix) {
        String q = ch.queueDeclare(new QueueDeclare().withQueue(prefix + "-q").withExclusive(true)).queue();
        List<Client.Returned> returned = new ArrayList<>();
        ch.onReturn(returned::add); // the I/O thread adds; read after waitForConfirms (the same lock orders it)
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
