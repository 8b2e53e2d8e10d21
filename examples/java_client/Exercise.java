// The exercise on the generated Java client (package amqgen.rabbit: amqgen render --lang java --spec
// amqp0-9-1.extended.xml --option package=amqgen.rabbit): log in, declare an exclusive queue, publish 100 messages
// with properties and a headers table, read them back with acks, close. Usage: java Exercise amqp://guest:guest@host
import amqgen.rabbit.BasicAck;
import amqgen.rabbit.BasicConsume;
import amqgen.rabbit.BasicProperties;
import amqgen.rabbit.BasicPublish;
import amqgen.rabbit.Client;
import amqgen.rabbit.QueueDeclare;
import java.nio.charset.StandardCharsets;
import java.util.Map;

public final class Exercise {
    public static void main(String[] args) {
        try (Client conn = Client.connect(args[0]); Client.Channel ch = conn.openChannel()) {
            String queue = ch.queueDeclare(new QueueDeclare().withExclusive(true)).queue();
            for (int i = 0; i < 100; i++) {
                BasicProperties props = BasicProperties.builder().contentType("text/plain").deliveryMode(2)
                        .messageId("m" + i).headers(Map.of("index", i, "origin", "exercise")).build();
                ch.publish(new BasicPublish().withRoutingKey(queue), props, ("hello " + i).getBytes(StandardCharsets.UTF_8));
            }
            try (Client.Subscription deliveries = ch.consume(new BasicConsume().withQueue(queue))) {
                for (int i = 0; i < 100; i++) {
                    Client.Delivery d = deliveries.next();
                    BasicProperties p = d.basicProperties();
                    String body = new String(d.body(), StandardCharsets.UTF_8);
                    if (!body.equals("hello " + i) || !p.messageId().equals("m" + i) || !p.headers().get("index").equals(i)) {
                        throw new IllegalStateException("message " + i + " came back as " + body + " " + p);
                    }
                    ch.basicAck(new BasicAck().withDeliveryTag(d.deliveryTag()));
                }
            }
        }
        System.out.println("OK 100 messages");
    }
}
