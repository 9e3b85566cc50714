package io.xaforward.cli;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import io.xaforward.common.Json;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * A run's full settings, as W&B and MLflow record them and as nanoGPT keeps its config in its checkpoints: every option
 * of the command that started the run, defaults included, as the text one would type (JSON, {@code config.json} beside
 * metrics.jsonl and inside every checkpoint). {@code xaf train --resume} reads them back from the checkpoint.
 */
final class RunSettings {
    /** The file beside metrics.jsonl (and in the work directory, where the workers pick it up). */
    static final String FILE = "config.json";
    /** Options whose values are secrets: recorded as given or not, never their value. */
    private static final Set<String> SECRET = Set.of("--token");

    private RunSettings() {}

    /** Every option of {@code command} (an annotated command object, parsed or filled in by code) with its current value. */
    static String json(String name, Object command) {
        CommandSpec spec = new CommandLine(command).getCommandSpec();
        Map<String, String> options = new TreeMap<>();
        for (OptionSpec o : spec.options()) {
            if (o.usageHelp() || o.versionHelp()) continue;
            Object v = o.getValue();
            String text = v == null ? null : v instanceof Collection<?> c ? c.stream().map(Words::text).collect(Collectors.joining(","))
                    : Words.text(o, v);
            if (SECRET.contains(o.longestName()) && text != null) text = "(given, not recorded)";
            options.put(o.longestName(), text);
        }
        JsonObject root = new JsonObject();
        root.addProperty("command", name);
        root.addProperty("version", Main.class.getAnnotation(CommandLine.Command.class).version()[0]);
        JsonObject opts = new JsonObject();
        options.forEach(opts::addProperty);
        root.add("options", opts);
        return Json.pretty(root);
    }

    static void write(Path file, String json) throws IOException {
        Files.writeString(file, json.endsWith("\n") ? json : json + "\n");
    }

    /** The options recorded in settings JSON: name -> value as typed (null: not given and no default). */
    static Map<String, String> options(String json) {
        Map<String, String> out = new TreeMap<>();
        JsonElement root = Json.parse(json);
        if (!root.isJsonObject() || !root.getAsJsonObject().has("options")) throw new IllegalArgumentException("not run settings: " + json);
        for (Map.Entry<String, JsonElement> e : root.getAsJsonObject().getAsJsonObject("options").entrySet()) {
            out.put(e.getKey(), e.getValue().isJsonNull() ? null : e.getValue().getAsString());
        }
        return out;
    }

    /**
     * The arguments that give every option of {@code spec} that the user did not set on this command line the value
     * {@code recorded} holds, except {@code never} (options that belong to this run alone, e.g. --out).
     */
    static List<String> inherited(CommandSpec spec, Map<String, String> recorded, Set<String> never) {
        List<String> args = new ArrayList<>();
        CommandLine.ParseResult parsed = spec.commandLine().getParseResult();
        for (OptionSpec o : spec.options()) {
            String name = o.longestName();
            if (o.usageHelp() || o.versionHelp() || never.contains(name) || SECRET.contains(name)) continue;
            if (parsed != null && parsed.hasMatchedOption(o)) continue;
            if (!recorded.containsKey(name)) continue;
            String v = recorded.get(name);
            if (o.arity().max() == 0) {
                if ("true".equals(v)) args.add(name);
            } else if (v != null) {
                args.add(name);
                args.add(v);
            }
        }
        return args;
    }
}
