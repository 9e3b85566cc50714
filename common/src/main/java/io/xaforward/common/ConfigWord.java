package io.xaforward.common;

import java.util.Arrays;
import java.util.Locale;
import java.util.Map;

/**
 * A constant of a configuration enum (a gateway mode, endpoint, algorithm, network form, wire format, wire security):
 * its word on command lines and in configuration and job files is {@link #configName()}, lower case, and every such
 * enum reads its words back through {@link #parse}, the one rule for all of them: white space around the word is
 * ignored, case does not matter, a few enums also take aliases, and a missing or unknown word is an error that names
 * what was expected and lists the accepted words.
 */
public interface ConfigWord {
    /** The word for this constant: lower case, '-' between words. */
    String configName();

    /** The constant of {@code type} whose word is {@code word}; {@code what} names the kind in the error. */
    static <E extends Enum<E> & ConfigWord> E parse(Class<E> type, String what, String word) {
        return parse(type, what, word, Map.of());
    }

    /**
     * The constant of {@code type} whose word, or one of whose {@code aliases} (lower case), is {@code word}; an
     * error otherwise, listing the words (not the aliases).
     */
    static <E extends Enum<E> & ConfigWord> E parse(Class<E> type, String what, String word, Map<String, E> aliases) {
        E found = find(type, word, aliases);
        if (found != null) return found;
        if (word == null) throw new IllegalArgumentException("no " + what + " given; expected one of " + words(type));
        throw new IllegalArgumentException("unknown " + what + " '" + word + "'; expected one of " + words(type));
    }

    /** As {@link #parse(Class, String, String, Map)}, but null where no constant has that word. */
    static <E extends Enum<E> & ConfigWord> E find(Class<E> type, String word, Map<String, E> aliases) {
        if (word == null) return null;
        String key = word.trim().toLowerCase(Locale.ROOT);
        for (E e : type.getEnumConstants()) if (e.configName().equals(key)) return e;
        return aliases.get(key);
    }

    /** The words of {@code type} in declaration order, comma separated, for errors and help texts. */
    static <E extends Enum<E> & ConfigWord> String words(Class<E> type) {
        return String.join(", ", Arrays.stream(type.getEnumConstants()).map(ConfigWord::configName).toList());
    }
}
