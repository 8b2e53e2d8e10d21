// The RabbitMQ Java client 5.0 against tests/java/EngineServer.java (tests/amqp0/java/test_java_server.py), as
// tests/c/rmq_publish.c is librabbitmq against engine_server.c: logs in (guest/guest, no heartbeat asked, its
// default frame_max 0 "no limit": the server's tune of 4096 wins), opens a channel, declares a queue, publishes a
// 6,000-octet body (two body frames at 4096; octet i is i % 251) with a content type and an "h2" header, closes
// the channel and the connection. args: host port queue. Prints the agreed frame_max, the declare-ok's queue
// and how the connection closed; exit 0 when every reply came, 1 and a line otherwise.
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.ShutdownSignalException;
import java.util.Map;

public final class RmqClientPublish {
    public static void main(String[] args) throws Exception {
        ConnectionFactory f = new ConnectionFactory();
        f.setHost(args[0]);
        f.setPort(Integer.parseInt(args[1]));
        f.setUsername("guest");
        f.setPassword("guest");
        f.setRequestedHeartbeat(0);
        f.setAutomaticRecoveryEnabled(false);
        f.setConnectionTimeout(30_000);
        f.setHandshakeTimeout(30_000);
        Connection conn = f.newConnection();
        System.out.println("frame_max " + conn.getFrameMax());
        Channel ch = conn.createChannel();
        AMQP.Queue.DeclareOk ok = ch.queueDeclare(args[2], false, true, false, null);
        System.out.println("declare-ok " + ok.getQueue());
        byte[] body = new byte[6000];
        for (int i = 0; i < body.length; i++) {
            body[i] = (byte) (i % 251);
        }
        ch.basicPublish("", args[2], new AMQP.BasicProperties.Builder().contentType("application/octet-stream")
                .headers(Map.of("h2", "from-java-client")).build(), body);
        ch.close();
        conn.close();
        ShutdownSignalException why = conn.getCloseReason();
        Object reason = why.getReason();
        int code = reason instanceof AMQP.Connection.Close c ? c.getReplyCode() : -1;
        // a clean close: ours (the application's), 200, answered (close() returned without an exception)
        System.out.println("closed " + (why.isInitiatedByApplication() ? "by-us" : "by-peer") + " " + code + " "
                + (conn.isOpen() ? "open" : "not-open"));
    }
}
