// The recovery soak (tests/faults/protocol.md's `soak`) on the RabbitMQ Java client 5.0 with its automatic
// connection and topology recovery, written as a user of that client would: two connections, a server-named queue
// bound to a direct exchange, a DefaultConsumer acking each delivery, publisher confirms per window with a
// ReturnListener for mandatory returns, and the application publishing again what waitForConfirmsOrDie did not
// confirm. The peer our clients' recovery is compared with (scripts/soak-recovery); it speaks the drivers' line
// protocol on stdin/stdout and runs the soak scenario only.
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.Recoverable;
import com.rabbitmq.client.impl.recovery.AutorecoveringConnection;
import com.rabbitmq.client.RecoveryListener;
import java.io.BufferedReader;
import java.io.FileWriter;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

public final class RmqSoak {
    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String[] words = line.trim().split(" ");
            if (words[0].equals("quit")) {
                return;
            }
            Map<String, String> p = new HashMap<>();
            for (String w : Arrays.copyOfRange(words, 2, words.length)) {
                int eq = w.indexOf('=');
                p.put(w.substring(0, eq), URLDecoder.decode(w.substring(eq + 1), StandardCharsets.UTF_8));
            }
            try {
                if (!words[1].equals("soak")) {
                    say("outcome error type=NotImplemented message=the%20Java%20client%20peer%20runs%20the%20soak%20only");
                    continue;
                }
                say(soak(p));
            } catch (Exception e) {
                e.printStackTrace();
                say("outcome error type=" + e.getClass().getSimpleName());
            }
        }
    }

    private static Connection connect(ConnectionFactory f, String name) throws Exception {
        Connection c = f.newConnection(name);
        ((Recoverable) c).addRecoveryListener(new RecoveryListener() {
            @Override
            public void handleRecoveryStarted(Recoverable r) {
                say("event recovery_started conn=" + name);
            }

            @Override
            public void handleRecovery(Recoverable r) {
                say("event recovered conn=" + name);
            }
        });
        return c;
    }

    private static String soak(Map<String, String> p) throws Exception {
        ConnectionFactory f = new ConnectionFactory();
        f.setUri(new URI(p.get("url")));
        f.setRequestedHeartbeat(Integer.parseInt(p.get("heartbeat")));
        f.setAutomaticRecoveryEnabled(true);
        f.setTopologyRecoveryEnabled(true);
        int count = Integer.parseInt(p.get("count"));
        int size = Integer.parseInt(p.get("size"));
        int window = Integer.parseInt(p.get("window"));
        String exchange = p.get("exchange");
        String key = p.get("routing_key");
        PrintWriter results = new PrintWriter(new FileWriter(p.get("results"), StandardCharsets.UTF_8, true));
        Set<Integer> seen = ConcurrentHashMap.newKeySet();

        Connection consumer = connect(f, "consumer");
        Connection producer = connect(f, "producer");
        Channel ch = consumer.createChannel();
        ch.basicQos(100);
        ch.exchangeDeclare(exchange, "direct");
        String queue = ch.queueDeclare("", false, false, false, null).getQueue();
        say("event queue name=" + queue);
        ((AutorecoveringConnection) consumer).addQueueRecoveryListener((old, renamed) ->
                say("event queue name=" + renamed));
        ch.queueBind(queue, exchange, key);
        ch.basicConsume(queue, false, new DefaultConsumer(ch) {
            @Override
            public void handleDelivery(String tag, Envelope env, AMQP.BasicProperties props, byte[] body)
                    throws java.io.IOException {
                int id = Integer.parseInt(new String(body, 0, 12, StandardCharsets.US_ASCII));
                synchronized (results) {
                    results.println("D " + id + " " + (env.isRedeliver() ? 1 : 0));
                }
                seen.add(id);
                getChannel().basicAck(env.getDeliveryTag(), false);
            }
        });

        Channel pch = producer.createChannel();
        pch.confirmSelect();
        Set<Integer> returned = ConcurrentHashMap.newKeySet();
        pch.addReturnListener((code, text, ex, rk, props, body) ->
                returned.add(Integer.parseInt(new String(body, 0, 12, StandardCharsets.US_ASCII))));
        List<Integer> pending = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            pending.add(i);
        }
        byte[] pad = "x".repeat(size - 12).getBytes(StandardCharsets.US_ASCII);
        long published = 0;
        double rate = Double.parseDouble(p.get("rate"));
        long start = System.nanoTime();
        long lastConfirm = start;
        for (long n = 0; !pending.isEmpty(); n++) {
            long due = start + (long) (n * window / rate * 1e9);
            if (due > System.nanoTime()) {
                Thread.sleep((due - System.nanoTime()) / 1_000_000);
            }
            List<Integer> batch = new ArrayList<>(pending.subList(0, Math.min(window, pending.size())));
            pending.subList(0, batch.size()).clear();
            boolean ok;
            try {
                for (int id : batch) {
                    byte[] body = new byte[size];
                    byte[] head = String.format("%012d", id).getBytes(StandardCharsets.US_ASCII);
                    System.arraycopy(head, 0, body, 0, 12);
                    System.arraycopy(pad, 0, body, 12, pad.length);
                    published++;
                    pch.basicPublish(exchange, key, true, null, body);
                }
                ok = pch.waitForConfirms(30_000); // false: a nack (OrDie would close the channel for good)
            } catch (Exception e) { // the connection went: nothing of the window is known to be confirmed
                ok = false;
            }
            List<Integer> again = new ArrayList<>();
            synchronized (results) {
                for (int id : batch) {
                    boolean confirmed = ok && !returned.remove(id);
                    results.println((confirmed ? "C " : "U ") + id);
                    if (!confirmed) {
                        again.add(id);
                    }
                }
                results.flush();
            }
            if (!again.isEmpty()) {
                pending.addAll(0, again);
                Thread.sleep(100); // recovering: publishes fail at once until the channel is back
            } else {
                lastConfirm = System.nanoTime();
            }
            if (System.nanoTime() - lastConfirm > 120_000_000_000L) {
                break;
            }
        }
        long until = System.nanoTime() + 120_000_000_000L;
        while (seen.size() < count && System.nanoTime() < until) {
            Thread.sleep(50);
        }
        synchronized (results) {
            results.close();
        }
        // abort, not close: a fault of the soak may be closing or recovering the connection at this moment, and
        // close() then throws (AlreadyClosedException) where the soak itself went well
        producer.abort();
        consumer.abort();
        return "outcome ok published=" + published + " confirmed=" + (count - pending.size()) + " consumed="
                + seen.size();
    }
}
