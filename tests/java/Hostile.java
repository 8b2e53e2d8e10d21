// Seeded random mutation of wire input for the generated codec (package amqgen.rabbit).
// Input: a file of seed streams, one hex line each (the corpus's frames, and its method and header
// payloads wrapped in frames). Each case mutates one seed (bit flips, interesting octets, 4-octet
// lengths set to huge values, insertions, deletions, cuts, duplicated ranges, splices of two seeds),
// feeds it to a FrameReader (random frame_max, random chunk sizes, heap or direct buffers) and also
// decodes the payload as a method, a content header and a field table. Only DecodeException may
// escape; anything else (an unchecked exception, an Error, a hang) fails. Each decode's allocation is
// measured (ThreadMXBean) and must stay within 256 octets per input octet plus 256 KiB (for the four decodes of
// each input together): a length field
// never buys an allocation the input does not back.
// Usage: java Hostile SEEDFILE SEED CASES. Prints a summary; exit 1 with the failing input on failure.
import amqgen.rabbit.DecodeException;
import amqgen.rabbit.Dialect;
import amqgen.rabbit.FieldTables;
import amqgen.rabbit.Frame;
import amqgen.rabbit.FrameReader;
import amqgen.rabbit.Methods;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

public final class Hostile {
    static final com.sun.management.ThreadMXBean THREADS = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    static final int[] FRAME_MAX = {0, 4096, 131072};
    /** The allocation a case may cost: it decodes its input four ways (a stream, a method, a header, a table). */
    static final long LIMIT_PER_OCTET = 256;
    static final long LIMIT_FIXED = 256 * 1024;
    static final byte[] INTERESTING = {0, 1, 0x7F, (byte) 0x80, (byte) 0xFF, (byte) 0xCE, 'A', 'F', 'A', 'S', 'x', 'D', 'T', 2, 3, 8};
    static final int[] HUGE = {0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0x00FFFFFF, 0x0000FFFF};

    static byte[] hex(String s) {
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }

    static String hexOf(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            s.append(String.format("%02x", x & 0xFF));
        }
        return s.toString();
    }

    static byte[] mutate(byte[] seed, List<byte[]> seeds, Random r) {
        byte[] b = seed.clone();
        int rounds = 1 + r.nextInt(4);
        for (int k = 0; k < rounds; k++) {
            int n = b.length;
            int at = n == 0 ? 0 : r.nextInt(n);
            switch (r.nextInt(9)) {
                case 0:
                    if (n > 0) {
                        b[at] ^= (byte) (1 << r.nextInt(8));
                    }
                    break;
                case 1:
                    if (n > 0) {
                        b[at] = INTERESTING[r.nextInt(INTERESTING.length)];
                    }
                    break;
                case 2:
                    if (n >= 4) {
                        int p = r.nextInt(n - 3);
                        int v = HUGE[r.nextInt(HUGE.length)];
                        b[p] = (byte) (v >>> 24);
                        b[p + 1] = (byte) (v >>> 16);
                        b[p + 2] = (byte) (v >>> 8);
                        b[p + 3] = (byte) v;
                    }
                    break;
                case 3: {
                    byte[] ins = new byte[1 + r.nextInt(8)];
                    r.nextBytes(ins);
                    byte[] out = new byte[n + ins.length];
                    System.arraycopy(b, 0, out, 0, at);
                    System.arraycopy(ins, 0, out, at, ins.length);
                    System.arraycopy(b, at, out, at + ins.length, n - at);
                    b = out;
                    break;
                }
                case 4:
                    if (n > 0) {
                        int len = 1 + r.nextInt(Math.min(16, n - at));
                        byte[] out = new byte[n - len];
                        System.arraycopy(b, 0, out, 0, at);
                        System.arraycopy(b, at + len, out, at, n - at - len);
                        b = out;
                    }
                    break;
                case 5:
                    b = Arrays.copyOf(b, at);
                    break;
                case 6:
                    if (n > 0) {
                        int len = 1 + r.nextInt(Math.min(64, n - at));
                        byte[] out = new byte[n + len];
                        System.arraycopy(b, 0, out, 0, at + len);
                        System.arraycopy(b, at, out, at + len, n - at);
                        b = out;
                    }
                    break;
                case 7: {
                    byte[] other = seeds.get(r.nextInt(seeds.size()));
                    int from = other.length == 0 ? 0 : r.nextInt(other.length);
                    byte[] out = Arrays.copyOf(b, at + other.length - from);
                    System.arraycopy(other, from, out, at, other.length - from);
                    b = out;
                    break;
                }
                default:
                    if (n > 0) {
                        b[at] = (byte) r.nextInt(256);
                    }
                    break;
            }
        }
        return b;
    }

    /** Everything a peer's octets can reach. Only DecodeException may come out. */
    static int decodeAll(byte[] data, Random r) throws DecodeException {
        int frames = 0;
        FrameReader reader = new FrameReader(FRAME_MAX[r.nextInt(FRAME_MAX.length)], r.nextBoolean() ? Dialect.RABBITMQ : Dialect.QPID);
        int i = 0;
        try {
            while (i < data.length) {
                int n = Math.min(data.length - i, 1 + r.nextInt(r.nextBoolean() ? 8 : 4096));
                ByteBuffer piece;
                if (r.nextInt(4) == 0) {
                    piece = ByteBuffer.allocateDirect(n).put(data, i, n).flip();
                } else {
                    piece = ByteBuffer.wrap(data, i, n);
                }
                for (Frame f : reader.feed(piece)) {
                    frames++;
                    if (f == null) {
                        throw new AssertionError("a null frame");
                    }
                }
                i += n;
            }
        } catch (DecodeException e) {
            frames++;
        }
        // the same octets as a payload of each kind, past a random prefix
        int skip = data.length == 0 ? 0 : r.nextInt(Math.min(data.length, 12));
        ByteBuffer rest = ByteBuffer.wrap(data, skip, data.length - skip);
        try {
            Methods.decode(rest.duplicate(), Dialect.RABBITMQ);
        } catch (DecodeException e) {
            frames++;
        }
        try {
            FrameReader.decodeHeader(1, rest.duplicate(), Dialect.QPID);
        } catch (DecodeException e) {
            frames++;
        }
        FieldTables.decodeTable(rest.duplicate(), Dialect.RABBITMQ);
        return frames;
    }

    public static void main(String[] args) throws Exception {
        List<byte[]> seeds = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of(args[0]))) {
            if (!line.isBlank()) {
                seeds.add(hex(line.trim()));
            }
        }
        long seed = Long.parseLong(args[1]);
        int cases = Integer.parseInt(args[2]);
        Random master = new Random(seed);
        long most = 0;
        int mostInput = 0;
        // warm-up, unmeasured: class loading and initialisation allocate once per run, not per input
        Random warm = new Random(seed ^ 0x5DEECE66DL);
        for (int c = 0; c < 2000; c++) {
            try {
                decodeAll(mutate(seeds.get(warm.nextInt(seeds.size())), seeds, warm), warm);
            } catch (DecodeException e) {
                // expected
            }
        }
        long started = System.nanoTime();
        for (int c = 0; c < cases; c++) {
            long caseSeed = master.nextLong();
            Random r = new Random(caseSeed);
            byte[] input = mutate(seeds.get(r.nextInt(seeds.size())), seeds, r);
            long before = THREADS.getCurrentThreadAllocatedBytes();
            try {
                decodeAll(input, r);
            } catch (DecodeException e) {
                // the documented outcome for malformed input
            } catch (Throwable t) {
                System.out.println("FAIL case " + c + " (case seed " + caseSeed + "): " + t + "\ninput " + hexOf(input));
                t.printStackTrace(System.out);
                System.exit(1);
            }
            long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
            if (allocated > most) {
                most = allocated;
                mostInput = input.length;
            }
            if (allocated > LIMIT_PER_OCTET * input.length + LIMIT_FIXED) {
                System.out.println("FAIL case " + c + " (case seed " + caseSeed + "): " + allocated + " octets allocated for "
                        + input.length + " octets of input\ninput " + hexOf(input));
                System.exit(1);
            }
        }
        long ms = (System.nanoTime() - started) / 1_000_000;
        System.out.println("OK " + cases + " mutated inputs from " + seeds.size() + " seeds (seed " + seed + ") in " + ms
                + " ms; the largest allocation was " + most + " octets, for " + mostInput + " octets of input");
    }
}
