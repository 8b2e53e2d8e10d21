import amqgen.rabbit.Dialect;
import amqgen.rabbit.Frame;
import amqgen.rabbit.FrameReader;
import amqgen.rabbit.Method;
import amqgen.rabbit.Methods;
import amqgen.rabbit.Properties;
import java.util.HexFormat;
import java.util.List;

/**
 * The values of tests/engine_diff's stream lines (tests/engine_diff/README.md), read with the generated package
 * amqgen.rabbit: shared by the differential driver (tests/engine_diff/JavaDriver.java) and the engine's mutation
 * test (EngineHostile.java).
 */
public final class StreamLines {
    private static final HexFormat HEX = HexFormat.of();

    private StreamLines() {}

    /** @return the octets of a hex field ("-": none) */
    static byte[] unhex(String s) {
        return "-".equals(s) ? new byte[0] : HEX.parseHex(s);
    }

    /** @return octets as a hex field ("-": none) */
    static String hex(byte[] b) {
        return b.length == 0 ? "-" : HEX.formatHex(b);
    }

    /** @return an encoded method (class id, method id, arguments), decoded */
    static Method method(String s) throws Exception {
        byte[] b = unhex(s);
        return Methods.decode(b, 0, b.length, Dialect.RABBITMQ);
    }

    /** @return a content header's payload (class, weight, body size, properties) read as the frame reader reads it */
    static Properties properties(String s) throws Exception {
        byte[] p = unhex(s);
        byte[] f = new byte[p.length + 8];
        f[0] = 2;
        f[3] = (byte) (p.length >>> 24);
        f[4] = (byte) (p.length >>> 16);
        f[5] = (byte) (p.length >>> 8);
        f[6] = (byte) p.length;
        System.arraycopy(p, 0, f, 7, p.length);
        f[f.length - 1] = (byte) 0xce;
        List<Frame> frames = new FrameReader(f.length, Dialect.RABBITMQ).feed(f, 0, f.length);
        if (frames.size() != 1 || !(frames.get(0) instanceof Frame.HeaderFrame h)) {
            throw new IllegalArgumentException("not a content header");
        }
        return h.properties();
    }
}
