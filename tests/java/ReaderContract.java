// FrameReader's error contract (package amqgen.rabbit), run by tests/amqp0/java/test_java_hostile.py: the frames a feed
// completes before a malformed frame ride on its DecodeException, and the reader stays failed after it.
// Prints "OK <checks>" or "FAIL ..." and exits 1.

import amqgen.rabbit.BasicPublish;
import amqgen.rabbit.ConnectionClose;
import amqgen.rabbit.ConnectionTune;
import amqgen.rabbit.DecodeException;
import amqgen.rabbit.Dialect;
import amqgen.rabbit.Frame;
import amqgen.rabbit.FrameReader;
import amqgen.rabbit.FrameWriter;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

public final class ReaderContract {
    private static int checks;

    private static void check(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAIL " + what);
            System.exit(1);
        }
        checks++;
    }

    private static byte[] frame(int type, int channel, byte[] payload) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(type);
        out.write(channel >> 8);
        out.write(channel);
        for (int s = 24; s >= 0; s -= 8) {
            out.write(payload.length >> s);
        }
        out.writeBytes(payload);
        out.write(0xCE);
        return out.toByteArray();
    }

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();

    private static long allocated() {
        return THREADS.getThreadAllocatedBytes(Thread.currentThread().getId());
    }

    private static byte[] hex(String h) {
        byte[] b = new byte[h.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
        }
        return b;
    }

    public static void main(String[] args) throws Exception {
        // basic.publish(exchange "ex", routing key "rk") and connection.close(320, "bye", 0, 0), by hand
        byte[] publish = frame(1, 1, hex("003c0028" + "0000" + "026578" + "02726b" + "00"));
        byte[] close = frame(1, 0, hex("000a0032" + "0140" + "03627965" + "0000" + "0000"));
        byte[] junk = hex("0900000000000000ce");
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        all.writeBytes(publish);
        all.writeBytes(close);
        all.writeBytes(junk);
        byte[] data = all.toByteArray();
        for (int step : new int[] {data.length, 1, 3, 7}) {
            for (boolean buffers : new boolean[] {false, true}) {
                FrameReader reader = new FrameReader();
                List<Frame> got = new ArrayList<>();
                DecodeException error = null;
                try {
                    for (int i = 0; i < data.length; i += step) {
                        int n = Math.min(step, data.length - i);
                        got.addAll(buffers ? reader.feed(ByteBuffer.wrap(data, i, n).slice()) : reader.feed(data, i, n));
                    }
                } catch (DecodeException e) {
                    error = e;
                }
                String where = "step " + step + (buffers ? " (ByteBuffer)" : " (array)");
                check(error instanceof DecodeException.FrameType, where + ": a frame-type error, got " + error);
                got.addAll(error.frames());
                check(got.size() == 2, where + ": 2 frames before the junk, got " + got);
                check(got.get(0) instanceof Frame.MethodFrame m0 && m0.method() instanceof BasicPublish, where + ": publish");
                check(got.get(1) instanceof Frame.MethodFrame m1 && m1.method() instanceof ConnectionClose c
                        && c.replyCode() == 320 && c.replyText().equals("bye"), where + ": the close, got " + got.get(1));
                for (byte[] again : new byte[][] {publish, new byte[0], junk}) {
                    try {
                        reader.feed(again, 0, again.length);
                        check(false, where + ": a feed after the error returned");
                    } catch (DecodeException.Failed f) {
                        check(f.kind() == DecodeException.Kind.FRAME_TYPE && f.getCause() == error
                                && f.frames().isEmpty(), where + ": sticky " + f);
                    }
                }
                check(reader.buffered() == 0, where + ": nothing held after the error");
            }
        }
        // frame_max as connection.tune gives it (a long) goes straight in (issue 18, item 8)
        long tuned = new ConnectionTune(0, 4096L, 0).frameMax();
        FrameReader capped = new FrameReader(tuned, Dialect.RABBITMQ);
        check(capped.maxFrameSize() == 4096, "reader capped at the tuned frame_max");
        try {
            capped.feed(frame(3, 1, new byte[4096 - 7]), 0, 4096 + 1);
            check(false, "a frame of 4097 octets passed a 4096 cap");
        } catch (DecodeException.FrameSize e) {
            check(e.frames().isEmpty(), "frame-size at the header");
        }
        capped = new FrameReader();
        capped.setMaxFrameSize(0xFFFFFFFFL);
        check(capped.maxFrameSize() == Integer.MAX_VALUE, "a frame_max over 2^31 - 1 counts as Integer.MAX_VALUE");
        for (long bad : new long[] {-1L, 0x100000000L}) {
            try {
                capped.setMaxFrameSize(bad);
                check(false, "frame_max " + bad + " accepted");
            } catch (IllegalArgumentException e) {
                check(true, "refused");
            }
        }
        FrameWriter writer = new FrameWriter(tuned, Dialect.RABBITMQ);
        check(writer.frameMax() == 4096, "writer capped at the tuned frame_max");
        writer.setFrameMax(0L);
        check(writer.frameMax() == 0, "writer: 0 is no limit");
        // no limit (0) still refuses, at its header, a frame larger than a Java array holds (issue 18, item 2)
        FrameReader open = new FrameReader(0, Dialect.RABBITMQ);
        check(open.feed(hex("030001000003e8"), 0, 7).isEmpty() && open.buffered() == 7, "0: a 1000-octet frame waits");
        open = new FrameReader(0, Dialect.RABBITMQ);
        try {
            open.feed(hex("0300017ffffff8"), 0, 7);
            check(false, "a frame of 2^31 octets passed a reader with no limit");
        } catch (DecodeException.FrameSize e) {
            check(open.buffered() == 0, "frame-size at the header, nothing held: " + e.getMessage());
        }
        // a body frame's payload is copied once, from the input into its Bytes; reading it needs no second copy
        // (issue 18, item 8): a read-only view, or straight into the caller's stream or array
        byte[] big = new byte[1 << 20];
        new java.util.Random(18).nextBytes(big);
        byte[] bodyFrame = frame(3, 1, big);
        FrameReader bodies = new FrameReader(0, Dialect.RABBITMQ);
        long before = allocated();
        List<Frame> one = bodies.feed(bodyFrame, 0, bodyFrame.length);
        long feedCost = allocated() - before;
        check(feedCost < big.length + (64 << 10), "one copy of a 1 MiB body in feed, allocated " + feedCost);
        amqgen.rabbit.Bytes payload = ((Frame.BodyFrame) one.get(0)).payload();
        before = allocated();
        ByteBuffer view = payload.asReadOnlyByteBuffer();
        long viewCost = allocated() - before;
        check(view.isReadOnly() && view.remaining() == big.length && view.get(0) == big[0]
                && view.get(big.length - 1) == big[big.length - 1], "a read-only view of the payload");
        check(viewCost < 1024, "the view copies nothing, allocated " + viewCost);
        ByteArrayOutputStream sink = new ByteArrayOutputStream(big.length);
        before = allocated();
        payload.writeTo(sink);
        long writeCost = allocated() - before;
        check(writeCost < 1024 && java.util.Arrays.equals(sink.toByteArray(), big), "writeTo copies nothing, allocated " + writeCost);
        byte[] message = new byte[big.length + 1];
        payload.copyTo(message, 1);
        check(java.util.Arrays.equals(message, 1, message.length, big, 0, big.length), "copyTo, at an offset");
        System.out.println("OK " + checks + " checks");
    }
}
