// The generated blocking client (package amqgen.rabbit) over TLS: its SSLEngine transport on the I/O thread,
// through tests/peers/tls_forwarder.py (a self-signed certificate for localhost, RabbitMQ behind it).
// Usage: java ClientTls amqps://guest:guest@localhost:PORT CERT.pem. Prints "OK <n> messages over TLS"; any failure:
// one "FAIL" line and exit 1.
import amqgen.rabbit.BasicAck;
import amqgen.rabbit.BasicConsume;
import amqgen.rabbit.BasicPublish;
import amqgen.rabbit.Client;
import amqgen.rabbit.ConfirmSelect;
import amqgen.rabbit.QueueDeclare;
import java.io.FileInputStream;
import java.io.InputStream;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.util.Arrays;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

public final class ClientTls {
    public static void main(String[] args) throws Exception {
        KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
        trust.load(null, null);
        try (InputStream in = new FileInputStream(args[1])) {
            trust.setCertificateEntry("forwarder", CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        int n = 30;
        try (Client conn = Client.connect(args[0], new Client.Options().ssl(ctx).heartbeat(5))) {
            Client.Channel ch = conn.openChannel();
            ch.confirmSelect(new ConfirmSelect());
            String q = ch.queueDeclare(new QueueDeclare().withExclusive(true)).queue();
            for (int i = 0; i < n; i++) { // bodies from 0 to 290 KB: TLS records of every size, frames split
                ch.publish(new BasicPublish().withRoutingKey(q), null, body(i));
            }
            if (!ch.waitForConfirms()) {
                throw new IllegalStateException("nacked");
            }
            try (Client.Subscription it = ch.consume(new BasicConsume().withQueue(q))) {
                for (int i = 0; i < n; i++) {
                    Client.Delivery d = it.next();
                    if (!Arrays.equals(d.body(), body(i))) {
                        throw new IllegalStateException("message " + i + " differs");
                    }
                    ch.basicAck(new BasicAck().withDeliveryTag(d.deliveryTag()));
                }
            }
        } catch (RuntimeException e) {
            System.out.println("FAIL " + e);
            e.printStackTrace();
            System.exit(1);
        }
        System.out.println("OK " + n + " messages over TLS");
    }

    static byte[] body(int i) {
        byte[] b = new byte[i * 10_000];
        for (int k = 0; k < b.length; k++) {
            b[k] = (byte) (i * 7 + k);
        }
        return b;
    }
}
