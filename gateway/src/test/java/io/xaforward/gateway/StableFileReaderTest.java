package io.xaforward.gateway;

import org.junit.jupiter.api.Test;

import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.*;

/** A config rewritten in place, in steps, is read only once it is whole. */
class StableFileReaderTest {
    static final String FULL = """
            ports: [{interface: a, form: id}]
            routes:
              - {id: 1, job: 1, token: 1, egress: a, dst-mac: 02:00:00:00:00:01}
            """;

    @Test
    void aFileBeingWrittenIsReadWhenItStopsChanging() throws Exception {
        Path file = Files.createTempFile("xaf-gw-torn", ".yaml");
        try {
            // The torn prefix an in-place writer leaves for a moment: ports written, routes not yet.
            String prefix = FULL.substring(0, FULL.indexOf("routes:"));
            Files.writeString(file, prefix);
            AtomicReference<Throwable> writerFailure = new AtomicReference<>();
            Thread writer = Thread.ofPlatform().start(() -> {
                try (OutputStream out = Files.newOutputStream(file, StandardOpenOption.APPEND)) {
                    byte[] rest = FULL.substring(prefix.length()).getBytes(StandardCharsets.UTF_8);
                    for (byte b : rest) {
                        Thread.sleep(5);
                        out.write(b);
                        out.flush();
                    }
                } catch (Exception e) {
                    writerFailure.set(e);
                }
            });
            String read = StableFileReader.read(file, 100);
            writer.join();
            assertNull(writerFailure.get());
            assertEquals(FULL, read);
            assertEquals(1, GatewayConfigParser.parse(read, file.toString()).routes().size());
        } finally {
            Files.deleteIfExists(file);
        }
    }

    @Test
    void theTornPrefixAloneIsRejectedByTheParser() {
        String prefix = FULL.substring(0, FULL.indexOf("routes:"));
        var e = assertThrows(GatewayConfigParser.ConfigException.class, () -> GatewayConfigParser.parse(prefix, "gw.yaml"));
        assertEquals("gw.yaml: top level: 'routes' is required", e.getMessage());
    }
}
