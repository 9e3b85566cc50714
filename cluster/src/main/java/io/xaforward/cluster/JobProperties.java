package io.xaforward.cluster;

import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

/** The file a launcher hands its worker processes a job spec in: Java properties, UTF-8. */
public final class JobProperties {
    private JobProperties() {
    }

    public static void write(Properties p, Path file, String comment) throws IOException {
        try (Writer w = Files.newBufferedWriter(file)) {
            p.store(w, comment);
        }
    }

    public static Properties read(Path file) throws IOException {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(file)) {
            p.load(r);
        }
        return p;
    }
}
