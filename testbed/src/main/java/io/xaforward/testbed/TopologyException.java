package io.xaforward.testbed;

/**
 * A topology file that cannot be turned into a testbed. The message names the file and the field, so the user can
 * fix the file without reading code.
 */
public final class TopologyException extends IllegalArgumentException {
    private final String source;
    private final String field;

    public TopologyException(String source, String field, String problem) {
        super(source + ": " + field + ": " + problem);
        this.source = source;
        this.field = field;
    }

    /** The file (or other origin) the topology came from. */
    public String source() {
        return source;
    }

    /** The path of the offending field, e.g. {@code datacenters[1].form}. */
    public String field() {
        return field;
    }
}
