package io.xaforward.common;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonElement;
import com.google.gson.JsonParser;
import com.google.gson.TypeAdapter;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import com.google.gson.stream.JsonWriter;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

import java.io.IOException;
import java.util.List;
import java.util.Map;

/**
 * The one JSON configuration of the project's outputs (metrics, metadata, reports, the testbed's state files): Gson,
 * keys in snake_case as the callers spell them, and NaN or infinite numbers written as {@code null} so that every line
 * stays valid JSON. Written one line at a time ({@link #line}) or indented for files people read ({@link #pretty}).
 *
 * <p>Read three ways: as Gson's tree ({@link #parse(String)}), into a class ({@link #parse(String, Class)}), or as
 * plain Java values ({@link #readPlain}: maps, lists, strings, Integer/Long/BigInteger, Double, Boolean), for code
 * that walks JSON it did not define, such as iproute2's {@code -j} output. Plain values are read with SnakeYAML's safe
 * constructor (JSON is YAML flow syntax), which types numbers by their text: Gson's {@code Object} reading would make
 * every number a Double.
 */
public final class Json {

    private static final TypeAdapter<Double> FINITE_DOUBLE = new TypeAdapter<>() {
        @Override
        public void write(JsonWriter out, Double value) throws IOException {
            if (value == null || value.isNaN() || value.isInfinite()) {
                out.nullValue();
            } else {
                out.value(value.doubleValue());
            }
        }

        @Override
        public Double read(JsonReader in) throws IOException {
            if (in.peek() == JsonToken.NULL) {
                in.nextNull();
                return Double.NaN;
            }
            return in.nextDouble();
        }
    };

    private static final TypeAdapter<Float> FINITE_FLOAT = new TypeAdapter<>() {
        @Override
        public void write(JsonWriter out, Float value) throws IOException {
            FINITE_DOUBLE.write(out, value == null ? null : value.doubleValue());
        }

        @Override
        public Float read(JsonReader in) throws IOException {
            return FINITE_DOUBLE.read(in).floatValue();
        }
    };

    private static final Gson COMPACT = builder().create();
    private static final Gson PRETTY = builder().setPrettyPrinting().create();

    private Json() {
    }

    private static GsonBuilder builder() {
        return new GsonBuilder()
                .disableHtmlEscaping()
                .serializeNulls()
                .registerTypeAdapter(Double.class, FINITE_DOUBLE)
                .registerTypeAdapter(double.class, FINITE_DOUBLE)
                .registerTypeAdapter(Float.class, FINITE_FLOAT)
                .registerTypeAdapter(float.class, FINITE_FLOAT);
    }

    /** One line of JSON (maps, lists, records, numbers, strings). */
    public static String line(Object value) {
        return COMPACT.toJson(value);
    }

    /** Indented JSON for files people read. */
    public static String pretty(Object value) {
        return PRETTY.toJson(value) + "\n";
    }

    /** Parses JSON text. */
    public static JsonElement parse(String text) {
        return JsonParser.parseString(text);
    }

    /** Parses JSON text into a class (records included). */
    public static <T> T parse(String text, Class<T> type) {
        return COMPACT.fromJson(text, type);
    }

    /** JSON text as plain Java values (see the class comment); null for empty text. */
    public static Object readPlain(String text) {
        LoaderOptions options = new LoaderOptions();
        options.setCodePointLimit(64 * 1024 * 1024);
        return new Yaml(new SafeConstructor(options)).load(text);
    }

    /** A JSON array of objects as plain Java values; empty for empty text. */
    @SuppressWarnings("unchecked")
    public static List<Map<String, Object>> readObjects(String text) {
        Object o = readPlain(text);
        return o == null ? List.of() : (List<Map<String, Object>>) o;
    }
}
