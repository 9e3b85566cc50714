package io.xaforward.gateway;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Arrays;

/**
 * Reads a file that another program may be rewriting in place: the content is returned only once two reads
 * {@code settleMillis} apart give the same bytes and modification time. An editor that truncates and writes in
 * steps is seen whole; writing a temporary file and renaming it over the config (atomic) is still the safe way.
 */
final class StableFileReader {
    private static final int MAX_TRIES = 20;

    private StableFileReader() {}

    static String read(Path file, long settleMillis) {
        try {
            byte[] last = Files.readAllBytes(file);
            FileTime lastTime = Files.getLastModifiedTime(file);
            for (int i = 0; i < MAX_TRIES; i++) {
                Thread.sleep(settleMillis);
                byte[] now = Files.readAllBytes(file);
                FileTime nowTime = Files.getLastModifiedTime(file);
                if (Arrays.equals(last, now) && lastTime.equals(nowTime)) return new String(now, java.nio.charset.StandardCharsets.UTF_8);
                last = now;
                lastTime = nowTime;
            }
            throw new GatewayConfigParser.ConfigException(file + ": still changing after " + MAX_TRIES * settleMillis
                    + " ms; write the new config to a temporary file and rename it over this one");
        } catch (NoSuchFileException e) {
            throw new GatewayConfigParser.ConfigException(file + ": file not found");
        } catch (IOException e) {
            throw new GatewayConfigParser.ConfigException(file + ": cannot read: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new GatewayConfigParser.ConfigException(file + ": interrupted while reading");
        }
    }
}
