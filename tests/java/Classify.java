// Classifies byte streams for tests/amqp0/engine/test_differential.py: one hex line per input on stdin, one line per
// input on stdout, in the format the Python and C classifiers print:
//   "ok N LEFT"  the stream gave N frames (methods and content headers decoded), LEFT octets held back
//   "KIND N"     the first error's kind (the corpus's names), after N good frames
// The reader runs with frame_max 4096 and the rabbitmq table dialect, fed the whole input at once.
import amqgen.rabbit.DecodeException;
import amqgen.rabbit.Dialect;
import amqgen.rabbit.FrameReader;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

public final class Classify {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            byte[] b = new byte[line.length() / 2];
            for (int i = 0; i < b.length; i++) {
                b[i] = (byte) Integer.parseInt(line.substring(2 * i, 2 * i + 2), 16);
            }
            FrameReader reader = new FrameReader(4096, Dialect.RABBITMQ);
            try {
                int n = reader.feed(b, 0, b.length).size();
                out.append("ok ").append(n).append(' ').append(reader.buffered()).append('\n');
            } catch (DecodeException e) {
                out.append(e.kind().wireName()).append(' ').append(e.frames().size()).append('\n');
            }
        }
        System.out.print(out);
    }
}
