package io.xaforward.gateway;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Arrays;

/**
 * Reads a file that another program may be rewriting in place: the content is returned only once two reads a
 * settle time apart give the same bytes and modification time.
 *
 * <p>The settle rule: a file replaced by a rename (a new inode: the atomic way, as editors that save safely and
 * configuration tools do) settles after {@code settleMillis}; a file rewritten in place (the same inode as at the
 * last read) must stay unchanged for {@code inPlaceSettleMillis}, a longer time, because a writer may pause anywhere,
 * even inside {@code routes:}, and the part written so far can be a valid but shorter config. A writer that pauses
 * longer than that is still seen half-way: write a temporary file and rename it over the config.
 */
final class StableFileReader {
    private static final int MAX_TRIES = 20;
    private final Path file;
    private final long settleMillis;
    private final long inPlaceSettleMillis;
    /** The file's identity (device and inode) at the last read: the same one means it was rewritten in place. */
    private Object lastKey;

    StableFileReader(Path file, long settleMillis, long inPlaceSettleMillis) {
        this.file = file;
        this.settleMillis = settleMillis;
        this.inPlaceSettleMillis = inPlaceSettleMillis;
        this.lastKey = fileKey(file);
    }

    /** The whole file, once it has settled by the rule above. */
    synchronized String read() {
        Object key = fileKey(file);
        String text = read(file, key != null && key.equals(lastKey) ? inPlaceSettleMillis : settleMillis);
        lastKey = fileKey(file);
        return text;
    }

    private static Object fileKey(Path file) {
        try {
            return Files.readAttributes(file, java.nio.file.attribute.BasicFileAttributes.class).fileKey();
        } catch (IOException e) {
            return null;
        }
    }

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
