package io.xaforward.testbed;

import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

import java.util.List;
import java.util.Map;

/** Minimal JSON: writes maps/lists/strings/numbers; reads via snakeyaml (JSON is valid YAML flow syntax). */
final class Json {
    private Json() {}

    static String write(Object value) {
        StringBuilder sb = new StringBuilder();
        write(value, sb, "");
        return sb.append('\n').toString();
    }

    private static void write(Object v, StringBuilder sb, String indent) {
        switch (v) {
            case null -> sb.append("null");
            case String s -> quote(s, sb);
            case Number n -> sb.append(n);
            case Boolean b -> sb.append(b);
            case Map<?, ?> m -> {
                sb.append("{");
                String inner = indent + "  ";
                boolean first = true;
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    sb.append(first ? "\n" : ",\n").append(inner);
                    quote(String.valueOf(e.getKey()), sb);
                    sb.append(": ");
                    write(e.getValue(), sb, inner);
                    first = false;
                }
                sb.append(first ? "}" : "\n" + indent + "}");
            }
            case List<?> l -> {
                sb.append("[");
                for (int i = 0; i < l.size(); i++) {
                    if (i > 0) sb.append(", ");
                    write(l.get(i), sb, indent);
                }
                sb.append("]");
            }
            default -> quote(v.toString(), sb);
        }
    }

    private static void quote(String s, StringBuilder sb) {
        sb.append('"');
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
                }
            }
        }
        sb.append('"');
    }

    static Object read(String json) {
        LoaderOptions opts = new LoaderOptions();
        opts.setCodePointLimit(64 * 1024 * 1024);
        return new Yaml(new SafeConstructor(opts)).load(json);
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> readArray(String json) {
        Object o = read(json);
        return o == null ? List.of() : (List<Map<String, Object>>) o;
    }
}
