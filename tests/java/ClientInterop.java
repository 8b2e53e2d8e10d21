// The generated Java codec (package amqgen.rabbit, from RabbitMQ's 0-9-1 extended spec) against the
// RabbitMQ Java client 5.0 (Debian's librabbitmq-client-java), both ways, for every method AMQImpl
// implements, BasicProperties with every property, and tables with every type code the client writes:
//   client -> ours: Method.toFrame / AMQContentHeader.toFrame / Frame.writeTo, read by our FrameReader,
//                   must equal the values the client was given;
//   ours -> client: FrameWriter output, read by Frame.readFrom + AMQImpl.readMethodFrom /
//                   readContentHeaderFrom, must hold the values we were given;
//   and the two encodings of the same values must be the same octets (every type code agrees here).
// Usage: java ClientInterop SEED ROUNDS. Prints one line per failure and a summary; exit 1 on failure.
import amqgen.rabbit.Bytes;
import amqgen.rabbit.Dialect;
import amqgen.rabbit.Frame;
import amqgen.rabbit.FrameReader;
import amqgen.rabbit.FrameWriter;
import amqgen.rabbit.MethodKind;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.LongString;
import com.rabbitmq.client.impl.AMQContentHeader;
import com.rabbitmq.client.impl.AMQImpl;
import com.rabbitmq.client.impl.LongStringHelper;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.RecordComponent;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

public final class ClientInterop {
    static final List<String> failures = new ArrayList<>();
    static int checks;

    static void check(boolean ok, String what) {
        checks++;
        if (!ok) {
            failures.add(what);
        }
    }

    // -- random values, as we hold them and as the client holds them ----------------------------------------
    static String text(Random r, int maxOctets) {
        String[] parts = {"a", "Z", "0", "-", ".", "é", "東", "😀", "ß", " "};
        StringBuilder s = new StringBuilder();
        int octets = 0;
        int n = r.nextInt(4) == 0 ? 1000 : r.nextInt(20);
        for (int i = 0; i < n; i++) {
            String p = parts[r.nextInt(parts.length)];
            int len = p.getBytes(StandardCharsets.UTF_8).length;
            if (octets + len > maxOctets) {
                break;
            }
            s.append(p);
            octets += len;
        }
        return s.toString();
    }

    static byte[] bytes(Random r, int max) {
        byte[] b = new byte[r.nextInt(max + 1)];
        r.nextBytes(b);
        return b;
    }

    /** A value of every kind the client's ValueWriter supports, in our representation. */
    static Object tableValue(Random r, int depth) {
        int kind = r.nextInt(depth > 2 ? 13 : 15);
        switch (kind) {
            case 0: return text(r, 300);
            case 1: return r.nextInt();
            case 2: return r.nextLong();
            case 3: return r.nextBoolean();
            case 4: return Bytes.of(bytes(r, 20));
            case 5: return r.nextDouble() * 1e6 - 5e5;
            case 6: return r.nextFloat();
            case 7: return BigDecimal.valueOf(r.nextInt(), r.nextInt(10));
            case 8: return Instant.ofEpochSecond(r.nextInt(Integer.MAX_VALUE));
            case 9: return (byte) r.nextInt();
            case 10: return (short) r.nextInt();
            case 11: return null;
            case 12: return r.nextInt(3) == 0 ? Double.NaN : Float.NEGATIVE_INFINITY;
            case 13: return table(r, depth + 1);
            default: {
                List<Object> items = new ArrayList<>();
                int n = r.nextInt(4);
                for (int i = 0; i < n; i++) {
                    items.add(tableValue(r, depth + 1));
                }
                return items;
            }
        }
    }

    static Map<String, Object> table(Random r, int depth) {
        Map<String, Object> t = new LinkedHashMap<>();
        int n = r.nextInt(depth == 0 ? 8 : 4);
        for (int i = 0; i < n; i++) {
            t.put("k" + i + text(r, 20), tableValue(r, depth));
        }
        return t;
    }

    /** One entry per type the client writes: S I D T F A b d f l s t x V. */
    static Map<String, Object> everyCode() {
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("S", "long string é");
        t.put("I", Integer.MIN_VALUE);
        t.put("D", new BigDecimal("-1234.5678"));
        t.put("T", Instant.ofEpochSecond(4102444800L));
        t.put("F", Map.of("inner", true));
        t.put("A", List.of(1, "x", List.of()));
        t.put("b", (byte) -1);
        t.put("d", -0.0);
        t.put("f", Float.MAX_VALUE);
        t.put("l", Long.MIN_VALUE);
        t.put("s", Short.MIN_VALUE);
        t.put("t", false);
        t.put("x", Bytes.of((byte) 0, (byte) 0xFF));
        t.put("V", null);
        return t;
    }

    /** Our value as the client's constructors take it. */
    static Object toClient(Object v) {
        if (v instanceof Bytes) {
            return ((Bytes) v).toByteArray();
        }
        if (v instanceof Instant) {
            return new Date(((Instant) v).toEpochMilli());
        }
        if (v instanceof Map) {
            Map<String, Object> out = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                out.put((String) e.getKey(), toClient(e.getValue()));
            }
            return out;
        }
        if (v instanceof List) {
            List<Object> out = new ArrayList<>();
            for (Object x : (List<?>) v) {
                out.add(toClient(x));
            }
            return out;
        }
        return v;
    }

    /** A comparable form of a value from either side: strings and octets as tagged hex, maps sorted. */
    static Object norm(Object v) {
        if (v instanceof LongString) {
            return "S:" + Bytes.of(((LongString) v).getBytes()).hex();
        }
        if (v instanceof String) {
            return "S:" + Bytes.utf8((String) v).hex();
        }
        if (v instanceof byte[]) {
            return "x:" + Bytes.of((byte[]) v).hex();
        }
        if (v instanceof Bytes) {
            return "x:" + ((Bytes) v).hex();
        }
        if (v instanceof Date) {
            return "T:" + ((Date) v).getTime() / 1000;
        }
        if (v instanceof Instant) {
            return "T:" + ((Instant) v).getEpochSecond();
        }
        if (v instanceof Float) {
            return "f:" + Float.floatToRawIntBits((Float) v);
        }
        if (v instanceof Double) {
            return "d:" + Double.doubleToRawLongBits((Double) v);
        }
        if (v instanceof BigDecimal) {
            return "D:" + ((BigDecimal) v).unscaledValue() + "e-" + ((BigDecimal) v).scale();
        }
        if (v instanceof Map) {
            Map<String, Object> out = new TreeMap<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                out.put((String) e.getKey(), norm(e.getValue()));
            }
            return out;
        }
        if (v instanceof List) {
            List<Object> out = new ArrayList<>();
            for (Object x : (List<?>) v) {
                out.add(norm(x));
            }
            return out;
        }
        if (v == null) {
            return "V";
        }
        return v.getClass().getSimpleName() + ":" + v;
    }

    /** A method field from a wire type: ours, and the client's form (int for octet/short/long). */
    static Object ours(String wire, Random r, int round) {
        boolean edge = round < 2;
        boolean high = round == 1;
        switch (wire) {
            case "bit": return edge ? high : r.nextBoolean();
            case "octet": return edge ? (high ? 255 : 0) : r.nextInt(256);
            case "short": return edge ? (high ? 65535 : 0) : r.nextInt(65536);
            case "long": return edge ? (high ? 4294967295L : 0L) : r.nextLong() & 0xFFFFFFFFL;
            case "longlong":
            case "timestamp": return edge ? (high ? -1L : 0L) : r.nextLong();
            case "shortstr": return edge ? (high ? "東".repeat(85) : "") : text(r, 255);
            case "longstr": return Bytes.of(edge ? (high ? new byte[] {0, (byte) 0xFF, (byte) 0xC3} : new byte[0]) : bytes(r, 64));
            default: return round == 1 ? everyCode() : round == 0 ? Map.of() : table(r, 0);
        }
    }

    static Object clientArg(Object ours, Class<?> type) {
        if (type == int.class && ours instanceof Long) {
            return (int) (long) (Long) ours;
        }
        if (type == LongString.class) {
            return LongStringHelper.asLongString(((Bytes) ours).toByteArray());
        }
        return toClient(ours);
    }

    static String diff(byte[] ours, byte[] theirs) {
        int i = Arrays.mismatch(ours, theirs);
        if (i < 0) {
            return "";
        }
        int from = Math.max(0, i - 8);
        return " at octet " + i + ": ours ..." + Bytes.copyOf(ours, from, Math.min(ours.length, i + 8) - from).hex()
                + ", client's ..." + Bytes.copyOf(theirs, from, Math.min(theirs.length, i + 8) - from).hex();
    }

    static Map<String, Object> inOrder(Map<String, Object> ours, Map<String, Object> theirs) {
        if (ours == null || theirs == null) {
            return ours;
        }
        Map<String, Object> out = new LinkedHashMap<>();
        for (String k : theirs.keySet()) {
            out.put(k, ours.get(k));
        }
        return out;
    }

    static byte[] write(com.rabbitmq.client.impl.Frame f) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        f.writeTo(new DataOutputStream(out));
        return out.toByteArray();
    }

    static List<Object> clientFields(Object o) throws Exception {
        List<Object> out = new ArrayList<>();
        for (Field f : o.getClass().getDeclaredFields()) {
            if (!Modifier.isStatic(f.getModifiers())) {
                f.setAccessible(true);
                out.add(f.get(o));
            }
        }
        return out;
    }

    static String clientClassName(String specName) {
        StringBuilder s = new StringBuilder("com.rabbitmq.client.impl.AMQImpl");
        for (String part : specName.split("\\.")) {
            s.append('$');
            for (String w : part.split("-")) {
                s.append(Character.toUpperCase(w.charAt(0))).append(w.substring(1));
            }
        }
        return s.toString();
    }

    @SuppressWarnings("unchecked")
    static void methods(Random r, int rounds) throws Exception {
        int covered = 0;
        for (MethodKind k : MethodKind.values()) {
            Class<?> cc;
            try {
                cc = Class.forName(clientClassName(k.specName()));
            } catch (ClassNotFoundException e) {
                failures.add(k.specName() + ": not in AMQImpl");
                continue;
            }
            covered++;
            List<String> wires = (List<String>) k.type().getField("WIRE_TYPES").get(null);
            RecordComponent[] comps = k.type().getRecordComponents();
            Constructor<?> ours = k.type().getDeclaredConstructor(Arrays.stream(comps).map(RecordComponent::getType).toArray(Class[]::new));
            Constructor<?> theirs = null;
            for (Constructor<?> c : cc.getConstructors()) {
                if (c.getParameterCount() == wires.size() && !(c.getParameterCount() == 1 && c.getParameterTypes()[0].getSimpleName().equals("MethodArgumentReader"))) {
                    theirs = c;
                }
            }
            check(theirs != null, k.specName() + ": no all-fields constructor in AMQImpl");
            if (theirs == null) {
                continue;
            }
            for (int round = 0; round < rounds; round++) {
                Object[] ourArgs = new Object[wires.size()];
                Object[] theirArgs = new Object[wires.size()];
                for (int i = 0; i < ourArgs.length; i++) {
                    ourArgs[i] = ours(wires.get(i), r, round);
                    theirArgs[i] = clientArg(ourArgs[i], theirs.getParameterTypes()[i]);
                }
                com.rabbitmq.client.impl.Method theirM = (com.rabbitmq.client.impl.Method) theirs.newInstance(theirArgs);
                List<Object> theirFields = clientFields(theirM);
                for (int i = 0; i < ourArgs.length; i++) {
                    if (wires.get(i).equals("table")) {  // the client keeps a copy in a HashMap: write ours in its order
                        ourArgs[i] = inOrder((Map<String, Object>) ourArgs[i], (Map<String, Object>) theirFields.get(i));
                    }
                }
                amqgen.rabbit.Method ourM = (amqgen.rabbit.Method) ours.newInstance(ourArgs);
                int channel = r.nextInt(65536);
                String what = k.specName() + " round " + round;
                // client -> ours
                byte[] clientWire = write(theirM.toFrame(channel));
                List<Frame> frames = new FrameReader(0, Dialect.RABBITMQ).feed(clientWire, 0, clientWire.length);
                check(frames.equals(List.of(new Frame.MethodFrame(channel, ourM))), what + ": client's frame decodes to " + frames);
                // ours -> client
                byte[] ourWire = new FrameWriter().writeMethod(channel, ourM).toByteArray();
                check(Arrays.equals(ourWire, clientWire), what + ": octets differ" + diff(ourWire, clientWire));
                com.rabbitmq.client.impl.Frame f = com.rabbitmq.client.impl.Frame.readFrom(new DataInputStream(new ByteArrayInputStream(ourWire)));
                check(f.type == 1 && f.channel == channel, what + ": client reads frame type " + f.type);
                com.rabbitmq.client.impl.Method got = AMQImpl.readMethodFrom(f.getInputStream());
                check(got.getClass() == cc, what + ": client reads " + got.getClass());
                List<Object> gotFields = clientFields(got);
                for (int i = 0; i < ourArgs.length; i++) {
                    Object want = norm(wires.get(i).equals("long") ? (Object) (int) (long) (Long) ourArgs[i] : ourArgs[i]);
                    if (wires.get(i).equals("longstr")) {
                        want = "S:" + ((Bytes) ourArgs[i]).hex();  // the client reads a longstr as a LongString
                    }
                    Object have = norm(gotFields.get(i));
                    check(want.equals(have), what + ": field " + i + " client reads " + have + ", want " + want);
                }
            }
        }
        check(covered == MethodKind.values().length, "AMQImpl implements " + covered + " of our methods");
        System.out.println("methods: " + covered + " methods x " + rounds + " rounds");
    }

    static void properties(Random r, int rounds) throws Exception {
        for (int round = 0; round < rounds; round++) {
            boolean all = round == 0;
            String[] s = new String[14];
            for (int i = 0; i < s.length; i++) {
                s[i] = all || r.nextBoolean() ? text(r, 255) : null;
            }
            Map<String, Object> headers = all ? everyCode() : r.nextBoolean() ? table(r, 0) : null;
            Integer mode = all || r.nextBoolean() ? r.nextInt(256) : null;
            Integer prio = all || r.nextBoolean() ? r.nextInt(256) : null;
            Long ts = all ? Long.valueOf(4294967295L) : r.nextBoolean() ? Long.valueOf(r.nextInt(Integer.MAX_VALUE)) : null;
            @SuppressWarnings("unchecked")
            AMQP.BasicProperties theirs = new AMQP.BasicProperties(s[0], s[1], (Map<String, Object>) toClient(headers), mode, prio,
                    s[5], s[6], s[7], s[8], ts == null ? null : new Date(ts * 1000), s[10], s[11], s[12], s[13]);
            headers = inOrder(headers, theirs.getHeaders());
            amqgen.rabbit.BasicProperties ours = amqgen.rabbit.BasicProperties.builder()
                    .contentType(s[0]).contentEncoding(s[1]).headers(headers).deliveryMode(mode).priority(prio)
                    .correlationId(s[5]).replyTo(s[6]).expiration(s[7]).messageId(s[8]).timestamp(ts).type(s[10])
                    .userId(s[11]).appId(s[12]).reserved(s[13]).build();
            long bodySize = round == 1 ? -1L : r.nextLong() >>> 1;
            int channel = r.nextInt(65536);
            String what = "basic properties round " + round;
            byte[] clientWire = write(theirs.toFrame(channel, bodySize));
            List<Frame> frames = new FrameReader(0, Dialect.RABBITMQ).feed(clientWire, 0, clientWire.length);
            check(frames.equals(List.of(new Frame.HeaderFrame(channel, 60, 0, bodySize, ours))), what + ": client's header decodes to " + frames);
            byte[] ourWire = new FrameWriter().writeHeader(channel, ours, bodySize).toByteArray();
            check(Arrays.equals(ourWire, clientWire), what + ": octets differ" + diff(ourWire, clientWire));
            com.rabbitmq.client.impl.Frame f = com.rabbitmq.client.impl.Frame.readFrom(new DataInputStream(new ByteArrayInputStream(ourWire)));
            AMQContentHeader h = AMQImpl.readContentHeaderFrom(f.getInputStream());
            check(h.getBodySize() == bodySize, what + ": client reads body size " + h.getBodySize());
            AMQP.BasicProperties got = (AMQP.BasicProperties) h;
            Object[] want = {s[0], s[1], headers, mode, prio, s[5], s[6], s[7], s[8], ts == null ? null : Instant.ofEpochSecond(ts), s[10], s[11], s[12], s[13]};
            Object[] have = {got.getContentType(), got.getContentEncoding(), got.getHeaders(), got.getDeliveryMode(), got.getPriority(),
                got.getCorrelationId(), got.getReplyTo(), got.getExpiration(), got.getMessageId(), got.getTimestamp(), got.getType(),
                got.getUserId(), got.getAppId(), got.getClusterId()};
            for (int i = 0; i < want.length; i++) {
                boolean absent = want[i] == null;
                check(absent ? have[i] == null : norm(want[i]).equals(norm(have[i])), what + ": property " + i + " client reads " + have[i]);
            }
        }
        System.out.println("properties: " + rounds + " rounds");
    }

    public static void main(String[] args) throws Exception {
        long seed = Long.parseLong(args[0]);
        int rounds = Integer.parseInt(args[1]);
        Random r = new Random(seed);
        methods(r, rounds);
        properties(r, rounds);
        for (String f : failures.subList(0, Math.min(40, failures.size()))) {
            System.out.println("FAIL " + f);
        }
        System.out.println(checks + " checks, " + failures.size() + " failed");
        System.exit(failures.isEmpty() ? 0 : 1);
    }
}
