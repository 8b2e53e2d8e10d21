// Drives the generated engine (package amqgen.rabbit) by commands on stdin, one a line, for
// tests/amqp0/java/test_java_engine.py, which builds the server's octets and the octets it expects by hand. After each
// command: "OUT <hex>" when the engine queued octets, "EV <record>" per event, "REFUSED" when the engine refused
// the call (and then also the octets it queued, which must be none).
import amqgen.rabbit.BasicProperties;
import amqgen.rabbit.BasicPublish;
import amqgen.rabbit.Bytes;
import amqgen.rabbit.ChannelOpen;
import amqgen.rabbit.ConfirmSelect;
import amqgen.rabbit.ConnectionOpen;
import amqgen.rabbit.ConnectionStartOk;
import amqgen.rabbit.ConnectionTuneOk;
import amqgen.rabbit.Engine;
import amqgen.rabbit.EngineEvent;
import amqgen.rabbit.LocalProtocolException;
import amqgen.rabbit.QueueDeclare;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Map;

public final class EngineChecks {
    public static void main(String[] args) throws Exception {
        Engine e = new Engine();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        HexFormat hex = HexFormat.of();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            String[] w = line.trim().split(" ");
            try {
                switch (w[0]) {
                    case "initiate" -> e.initiate();
                    case "feed" -> {
                        byte[] b = hex.parseHex(w[1]);
                        e.receive(b, 0, b.length);
                    }
                    case "eof" -> e.receiveEof();
                    case "tick" -> e.tick(Long.parseLong(w[1]));
                    case "start-ok" -> e.send(0, new ConnectionStartOk(Map.of(), "PLAIN",
                            Bytes.of((byte) 0, (byte) 'u', (byte) 0, (byte) 'p'), "en_US"));
                    case "tune-ok" -> e.send(0, new ConnectionTuneOk(Integer.parseInt(w[1]), Long.parseLong(w[2]),
                            Integer.parseInt(w[3])));
                    case "open" -> e.send(0, new ConnectionOpen().withVirtualHost(w[1]));
                    case "channel-open" -> e.send(Integer.parseInt(w[1]), new ChannelOpen());
                    case "declare" -> e.send(Integer.parseInt(w[1]), new QueueDeclare().withQueue(w[2]));
                    case "confirm" -> e.send(Integer.parseInt(w[1]), new ConfirmSelect());
                    case "publish" -> {
                        byte[] body = new byte[Integer.parseInt(w[2])];
                        java.util.Arrays.fill(body, (byte) 'x');
                        long tag = e.publish(Integer.parseInt(w[1]), new BasicPublish().withRoutingKey("q"),
                                BasicProperties.builder().deliveryMode(2).build(), body);
                        System.out.println("TAG " + tag);
                    }
                    case "publish-to" -> { // publish-to <channel> <exchange> <routing key>: a mandatory publish
                        long tag = e.publish(Integer.parseInt(w[1]), new BasicPublish().withExchange(w[2])
                                .withRoutingKey(w[3]).withMandatory(true), null, new byte[] {'b'});
                        System.out.println("TAG " + tag);
                    }
                    case "close" -> e.close(200, "bye", 0, 0);
                    default -> throw new IllegalArgumentException(line);
                }
            } catch (LocalProtocolException x) {
                System.out.println("REFUSED " + x.getMessage());
            }
            byte[] out = e.dataToSend();
            if (out.length > 0) {
                System.out.println("OUT " + hex.formatHex(out));
            }
            for (EngineEvent ev = e.nextEvent(); ev != null; ev = e.nextEvent()) {
                if (ev instanceof EngineEvent.MessageReceived m) {
                    System.out.println("EV MessageReceived " + m.channel() + " " + m.method() + " "
                            + new String(m.body(), StandardCharsets.UTF_8));
                } else if (ev instanceof EngineEvent.MessageReturned r) {
                    System.out.println("EV MessageReturned " + r.channel() + " " + r.method() + " " + r.properties()
                            + " " + new String(r.body(), StandardCharsets.UTF_8) + " TAG " + r.deliveryTag());
                } else {
                    System.out.println("EV " + ev);
                }
            }
            System.out.println("--");
        }
    }
}
