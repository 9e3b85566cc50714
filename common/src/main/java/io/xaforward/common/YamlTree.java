package io.xaforward.common;

import org.yaml.snakeyaml.DumperOptions;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

import java.io.StringReader;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Reads YAML into plain maps, lists and strings, with no implicit typing: every scalar stays the text that was
 * written. YAML 1.1's resolver would turn an unquoted MAC address into a base-60 number, {@code 0123} into 83 and
 * {@code 1.9} into a float that a cast makes 1; here the config parser decides what each key's text means, and
 * rejects what it cannot read exactly. A key given twice in one mapping is an error naming where.
 */
public final class YamlTree {
    private YamlTree() {}

    /** The document as Map/List/String, or null for an empty document. */
    public static Object read(String yaml, Function<String, RuntimeException> fail) {
        Node root;
        try {
            LoaderOptions options = new LoaderOptions();
            options.setMaxAliasesForCollections(0);
            options.setCodePointLimit(64 << 20); // a full route map (65536 routes) is ~10 MB of YAML
            root = new Yaml(options).compose(new StringReader(yaml));
        } catch (RuntimeException e) {
            throw fail.apply("not valid YAML: " + e.getMessage());
        }
        return root == null ? null : convert(root, "top level", fail);
    }

    private static Object convert(Node node, String where, Function<String, RuntimeException> fail) {
        return switch (node) {
            case ScalarNode s -> s.getValue().isEmpty() && s.getScalarStyle() == DumperOptions.ScalarStyle.PLAIN
                    || isPlainNull(s) ? null : s.getValue();
            case SequenceNode seq -> {
                List<Object> out = new ArrayList<>();
                for (Node item : seq.getValue()) out.add(convert(item, where + "[" + out.size() + "]", fail));
                yield out;
            }
            case MappingNode map -> {
                Map<String, Object> out = new LinkedHashMap<>();
                for (NodeTuple t : map.getValue()) {
                    if (!(t.getKeyNode() instanceof ScalarNode k)) throw fail.apply(where + ": keys must be plain names" + line(t.getKeyNode().getStartMark()));
                    String key = k.getValue();
                    String child = where.equals("top level") ? key : where + "." + key;
                    if (out.containsKey(key)) {
                        throw fail.apply(where + ": key '" + key + "' appears twice" + line(k.getStartMark()));
                    }
                    out.put(key, convert(t.getValueNode(), child, fail));
                }
                yield out;
            }
            default -> throw fail.apply(where + ": unsupported YAML node" + line(node.getStartMark()));
        };
    }

    /** {@code ~} and {@code null} written bare mean "no value", as an empty value does. */
    private static boolean isPlainNull(ScalarNode s) {
        return s.getScalarStyle() == DumperOptions.ScalarStyle.PLAIN
                && (s.getValue().equals("~") || s.getValue().equals("null"));
    }

    private static String line(Mark mark) {
        return mark == null ? "" : " (line " + (mark.getLine() + 1) + ")";
    }
}
