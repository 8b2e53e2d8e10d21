// Runs the generated Checks (package amqgen.rabbit) on cases read from standard input, one per line:
//   METHOD<TAB>POLICY<TAB>FIELD=VALUE<TAB>...
// (spec names; a missing field takes its default; VALUE is decimal for integers, true/false for bits, the
// text itself for short strings). Prints one line per case: "ok", or the reply code it raised.
// Then registers a check for the first rule and prints the coverage report's first line.
import amqgen.rabbit.Checks;
import amqgen.rabbit.Method;
import amqgen.rabbit.MethodKind;
import amqgen.rabbit.ReplyException;
import amqgen.rabbit.Rules;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Constructor;
import java.lang.reflect.RecordComponent;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public final class ChecksRun {
    @SuppressWarnings("unchecked")
    static Method build(String name, Map<String, String> values) throws Exception {
        MethodKind kind = MethodKind.forName(name);
        List<String> fields = (List<String>) kind.type().getField("FIELDS").get(null);
        List<String> wires = (List<String>) kind.type().getField("WIRE_TYPES").get(null);
        RecordComponent[] comps = kind.type().getRecordComponents();
        Object[] args = new Object[comps.length];
        for (int i = 0; i < args.length; i++) {
            String v = values.get(fields.get(i));
            switch (wires.get(i)) {
                case "bit": args[i] = v != null && Boolean.parseBoolean(v); break;
                case "octet":
                case "short": args[i] = v == null ? 0 : Integer.parseInt(v); break;
                case "long":
                case "longlong":
                case "timestamp": args[i] = v == null ? 0L : Long.parseLong(v); break;
                case "shortstr": args[i] = v == null ? "" : v; break;
                case "longstr": args[i] = v == null ? null : amqgen.rabbit.Bytes.utf8(v); break;
                default: args[i] = null; break;  // table: empty
            }
        }
        Constructor<?> c = kind.type().getDeclaredConstructor(Arrays.stream(comps).map(RecordComponent::getType).toArray(Class[]::new));
        return (Method) c.newInstance(args);
    }

    public static void main(String[] argv) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Map<String, Long> negotiated = Map.of("connection.tune.channel-max", 10L);
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isEmpty()) {
                continue;
            }
            String[] parts = line.split("\t", -1);
            Map<String, String> values = new HashMap<>();
            for (int i = 2; i < parts.length; i++) {
                int eq = parts[i].indexOf('=');
                values.put(parts[i].substring(0, eq), parts[i].substring(eq + 1));
            }
            Method m = build(parts[0], values);
            try {
                Checks.validate(m, negotiated, Checks.Policy.valueOf(parts[1]));
                out.append("ok\n");
            } catch (ReplyException e) {
                out.append(e.replyCode()).append('\n');
            }
        }
        Rules.REGISTRY.register(Rules.RULES.get(0).id(), "a check");
        try {
            Rules.REGISTRY.register("no.such.rule", "a check");
            out.append("unknown rule accepted\n");
        } catch (IllegalArgumentException e) {
            out.append("unknown rule refused\n");
        }
        out.append(Rules.REGISTRY.coverage().report().lines().findFirst().orElse("")).append('\n');
        System.out.print(out);
    }
}
