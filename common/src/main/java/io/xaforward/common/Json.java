package io.xaforward.common;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonElement;
import com.google.gson.JsonParser;
import com.google.gson.TypeAdapter;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonWriter;

import java.io.IOException;

/**
 * The one JSON configuration of the project's outputs (metrics, metadata, reports): Gson, keys in snake_case as the
 * callers spell them, and NaN or infinite numbers written as {@code null} so that every line stays valid JSON.
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
            if (in.peek() == com.google.gson.stream.JsonToken.NULL) {
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
}
