package io.xaforward.testbed;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

import java.util.List;
import java.util.Map;

/** JSON of the testbed's state files: written with Gson; read via snakeyaml (JSON is valid YAML flow syntax). */
final class Json {
    private Json() {}

    // Gson refuses NaN and infinities instead of writing invalid JSON; state files hold none.
    private static final Gson GSON = new GsonBuilder().setPrettyPrinting().disableHtmlEscaping().serializeNulls().create();

    static String write(Object value) {
        return GSON.toJson(value) + "\n";
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
