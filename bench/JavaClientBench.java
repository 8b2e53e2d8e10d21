// Client CPU per message: the generated Java client (package amqgen.rabbit) or the RabbitMQ Java client 5.0, one
// per JVM, against RabbitMQ. N messages of 128 octets published with confirms (all, then wait for the confirms),
// then consumed with a callback that acks each one (prefetch 1000). A warm-up round of the same work first (JIT),
// then the timed round: process CPU (user + system, from the JVM's OperatingSystemMXBean) and wall time.
// Usage: java JavaClientBench amqgen|rabbit URI N WARMUP. Prints "RESULT side n cpu_ns wall_ns".
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

    static long cpu() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    static void amqgen(String uri, int n) throws Exception {
        try (amqgen.rabbit.Client conn = amqgen.rabbit.Client.connect(uri)) {
            amqgen.rabbit.Client.Channel ch = conn.openChannel();
            String q = ch.queueDeclare(new amqgen.rabbit.QueueDeclare().withExclusive(true)).queue();
            ch.confirmSelect(new amqgen.rabbit.ConfirmSelect());
            amqgen.rabbit.BasicPublish publish = new amqgen.rabbit.BasicPublish().withRoutingKey(q);
            amqgen.rabbit.BasicProperties props = amqgen.rabbit.BasicProperties.builder().contentType("application/octet-stream").build();
            for (int i = 0; i < n; i++) {
                ch.publish(publish, props, BODY);
            }
            if (!ch.waitForConfirms()) {
                throw new IllegalStateException("nacked");
            }
            ch.basicQos(new amqgen.rabbit.BasicQos().withPrefetchCount(1000));
            CountDownLatch done = new CountDownLatch(n);
            ch.consume(new amqgen.rabbit.BasicConsume().withQueue(q), d -> {
                ch.basicAck(new amqgen.rabbit.BasicAck().withDeliveryTag(d.deliveryTag()));
                done.countDown();
            });
            if (!done.await(600, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not all delivered");
            }
        }
    }

    static void rabbit(String uri, int n) throws Exception {
        ConnectionFactory f = new ConnectionFactory();
        f.setUri(uri);
        try (Connection conn = f.newConnection()) {
            Channel ch = conn.createChannel();
            String q = ch.queueDeclare("", false, true, true, null).getQueue();
            ch.confirmSelect();
            AMQP.BasicProperties props = new AMQP.BasicProperties.Builder().contentType("application/octet-stream").build();
            for (int i = 0; i < n; i++) {
                ch.basicPublish("", q, props, BODY);
            }
            ch.waitForConfirmsOrDie(600_000);
            ch.basicQos(1000);
            CountDownLatch done = new CountDownLatch(n);
            ch.basicConsume(q, false, new DefaultConsumer(ch) {
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
        }
    }

    public static void main(String[] args) throws Exception {
        String side = args[0];
        String uri = args[1];
        int n = Integer.parseInt(args[2]);
        int warmup = Integer.parseInt(args[3]);
        for (int round = 0; round < 2; round++) {
            int count = round == 0 ? warmup : n;
            long c0 = cpu();
            long t0 = System.nanoTime();
            if (side.equals("amqgen")) {
                amqgen(uri, count);
            } else {
                rabbit(uri, count);
            }
            if (round == 1) {
                System.out.println("RESULT " + side + " " + n + " " + (cpu() - c0) + " " + (System.nanoTime() - t0));
            }
        }
    }
}
