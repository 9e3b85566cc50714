package io.xaforward.gateway;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.nio.file.DirectoryStream;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads a file that another program may be rewriting in place: the content is returned only once it has settled.
 *
 * <p>The settle rule (docs/GATEWAY.md, "Reloading"): a changed file is taken when (1) two reads a settle time apart
 * give the same bytes and modification time, the settle time being {@code settleMillis} for a file replaced by a
 * rename (a new inode: the atomic way, as editors that save safely and configuration tools do) and
 * {@code inPlaceSettleMillis}, longer, for a file rewritten in place (the same inode as at the last read); and (2) no
 * process holds the file open for writing (found through /proc/PID/fd and fdinfo). A writer that pauses anywhere
 * with the file open, even inside {@code routes:} where the part written so far is a valid but shorter config, is
 * waited for however long it pauses (up to {@code writerWaitMillis} per read, then {@link StillBeingWritten}). A
 * writer that closes the file between pieces and pauses longer than the in-place settle time cannot be told from
 * one that has finished: write a temporary file and rename it over the config.
 */
final class StableFileReader {
    private static final int MAX_TRIES = 20;
    private final Path file;
    private final long settleMillis;
    private final long inPlaceSettleMillis;
    private final long writerWaitMillis;
    /** The file's identity (device and inode) at the last read: the same one means it was rewritten in place. */
    private Object lastKey;

    /** A read that found the file still open for writing after the longest wait: try again later. */
    static final class StillBeingWritten extends GatewayConfigParser.ConfigException {
        StillBeingWritten(String message) {
            super(message);
        }
    }

    StableFileReader(Path file, long settleMillis, long inPlaceSettleMillis, long writerWaitMillis) {
        this.file = file;
        this.settleMillis = settleMillis;
        this.inPlaceSettleMillis = inPlaceSettleMillis;
        this.writerWaitMillis = writerWaitMillis;
        this.lastKey = fileKey(file);
    }

    /** The whole file, once it has settled by the rule above. */
    synchronized String read() {
        Object key = fileKey(file);
        long settle = key != null && key.equals(lastKey) ? inPlaceSettleMillis : settleMillis;
        long deadline = System.nanoTime() + writerWaitMillis * 1_000_000L;
        while (true) {
            String text = read(file, settle);
            List<String> writers = writers(file);
            // A writer may also have opened the file, written and closed it since the settled read: take the text
            // only if the file still holds it.
            if (writers.isEmpty() && text.equals(readNow(file))) {
                lastKey = fileKey(file);
                return text;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new StillBeingWritten(file + ": " + (writers.isEmpty() ? "still changing" : "still open for writing by "
                        + String.join(", ", writers)) + " after " + writerWaitMillis / 1000
                        + " s; not applied (read again at its next change or on SIGHUP)");
            }
            if (!writers.isEmpty()) sleep(settle);
        }
    }

    /**
     * The processes that hold {@code file} open for writing, as "PID (command)", found through /proc/PID/fd (every
     * process's when run as root, else only those this user may inspect); empty when none, or without /proc.
     */
    static List<String> writers(Path file) {
        Object key = fileKey(file);
        List<String> out = new ArrayList<>();
        if (key == null) return out;
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), p -> isNumber(p.getFileName().toString()))) {
            for (Path proc : procs) {
                try (DirectoryStream<Path> fds = Files.newDirectoryStream(proc.resolve("fd"))) {
                    for (Path fd : fds) {
                        if (key.equals(fileKey(fd)) && openForWriting(proc.resolve("fdinfo").resolve(fd.getFileName()))) {
                            out.add(proc.getFileName() + " (" + command(proc) + ")");
                            break;
                        }
                    }
                } catch (IOException | SecurityException e) {
                    // gone, or not ours to inspect
                }
            }
        } catch (IOException e) {
            return out;
        }
        return out;
    }

    private static boolean isNumber(String s) {
        if (s.isEmpty()) return false;
        for (int i = 0; i < s.length(); i++) if (s.charAt(i) < '0' || s.charAt(i) > '9') return false;
        return true;
    }

    /** Whether an fdinfo file's "flags:" (octal open flags) has O_WRONLY or O_RDWR. */
    private static boolean openForWriting(Path fdinfo) {
        try {
            for (String line : Files.readAllLines(fdinfo)) {
                if (line.startsWith("flags:")) return (Long.parseLong(line.substring(6).strip(), 8) & 3) != 0;
            }
        } catch (IOException | NumberFormatException e) {
            // the descriptor was closed meanwhile
        }
        return false;
    }

    private static String command(Path proc) {
        try {
            return Files.readString(proc.resolve("comm")).strip();
        } catch (IOException e) {
            return "?";
        }
    }

    /** The file's text now, or null when it cannot be read; a file that fails the checks is refused (thrown). */
    private static String readNow(Path file) {
        try {
            return GatewayConfigParser.readFile(file);
        } catch (GatewayConfigParser.UnsafeConfigFile e) {
            throw e;
        } catch (GatewayConfigParser.ConfigException e) {
            return null;
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new GatewayConfigParser.ConfigException("interrupted while reading");
        }
    }

    private static Object fileKey(Path file) {
        try {
            return Files.readAttributes(file, BasicFileAttributes.class).fileKey();
        } catch (IOException e) {
            return null;
        }
    }

    /**
     * Every read goes through {@link GatewayConfigParser#readFile}, so the text returned is that of a file that
     * passed the owner, mode and link checks when it was read (a refused one throws {@link GatewayConfigParser.UnsafeConfigFile}).
     */
    static String read(Path file, long settleMillis) {
        try {
            String last = GatewayConfigParser.readFile(file);
            FileTime lastTime = Files.getLastModifiedTime(file);
            for (int i = 0; i < MAX_TRIES; i++) {
                Thread.sleep(settleMillis);
                String now = GatewayConfigParser.readFile(file);
                FileTime nowTime = Files.getLastModifiedTime(file);
                if (last.equals(now) && lastTime.equals(nowTime)) return now;
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
