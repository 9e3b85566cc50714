package io.xaforward.common;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * Reads files that hold secrets or that decide what a privileged process does, the way ssh reads private keys.
 *
 * <ul>
 *   <li>{@link #read}: a secret (the job secret, an etcd password, token or TLS key). Refused when group or others
 *       may read or write it, when it is owned by another user (root's are accepted), or when it is a symbolic link
 *       or not a regular file. A key others can read is no longer a secret, and a link can be pointed elsewhere.</li>
 *   <li>{@link #readTrusted}: a file that is not secret but must not be changed by anyone else (a gateway config,
 *       etcd's CA certificate and the client certificate): the same checks, except that group and others may read
 *       it; they may not write it.</li>
 * </ul>
 *
 * <p>For both, every directory above the file, up to the root (and, where a directory on the way is a symbolic
 * link, every directory above its target), must be owned by root or this process's user and not writable by group or
 * others ({@link #checkDirectories}): whoever may write a directory may rename the file away and put their own in
 * its place, or replace a directory further down, whatever the file's own mode says. This is OpenSSH's rule for
 * its users' keys ({@code safe_path}), with one addition: a directory with the sticky bit (like {@code /tmp} and
 * {@code /dev/shm}, mode 1777) is accepted even when others may write it. There, others may add names but not
 * rename or remove the ones they do not own, so they cannot replace the file or a directory of ours inside it; and a
 * file they put there under the name we asked for is refused by the owner check. Refusing {@code /tmp} would
 * refuse every private temporary directory made in it ({@code mktemp -d}, {@code Files.createTempDirectory}, mode
 * 0700), the usual place for a job's secrets on a login node.
 *
 * <p>Why the checks are race-free: the file is opened once, with {@code O_NOFOLLOW} (a symbolic link as the last
 * component fails the open with ELOOP instead of being followed), and the owner, mode and type are read from the
 * <em>opened descriptor</em> with {@code statx(fd, "", AT_EMPTY_PATH)} (an fstat), and the bytes returned are read
 * from that same descriptor. Checking the path before or after opening would leave a window in which the name could
 * be renamed or re-linked to another file: the check would see one file and the read another. A descriptor always
 * names the file that was opened, whatever happens to its name. Java's {@code Files} API cannot stat an opened
 * channel, hence the two libc calls through the FFM API. {@code statx} is used rather than {@code fstat} because its
 * struct has the same layout on every architecture. {@code O_NONBLOCK} keeps the open from hanging on a FIFO put in
 * the file's place; it is refused as not a regular file a moment later.
 */
public final class PrivateFiles {
    /** A secret is a key or a password: anything longer is not one. */
    private static final int MAX_SECRET_BYTES = 1 << 20;
    /** A gateway config of a full route map (65,536 routes of ~150 bytes) is about 10 MB; refused beyond, never cut. */
    private static final int MAX_TRUSTED_BYTES = 64 << 20;
    private static final int CHUNK = 64 << 10;

    /** Mode bits: group and others, any access / write access. */
    private static final int GROUP_OR_OTHERS_ANY = 0077;
    private static final int GROUP_OR_OTHERS_WRITE = 0022;
    private static final int S_IFMT = 0170000;
    private static final int S_IFREG = 0100000;
    private static final int S_IFLNK = 0120000;
    /** The sticky bit: in such a directory only a name's owner (or the directory's, or root) may rename or remove it. */
    private static final int S_ISVTX = 01000;

    private static final int O_RDONLY = 0;
    private static final int O_NOCTTY = 0400;
    private static final int O_NONBLOCK = 04000;
    private static final int O_CLOEXEC = 02000000;
    /** O_NOFOLLOW differs between architectures (asm-generic vs arm64's own fcntl.h). */
    private static final int O_NOFOLLOW = switch (System.getProperty("os.arch")) {
        case "aarch64", "arm64" -> 0100000;
        default -> 0400000; // x86-64 and the asm-generic value
    };
    private static final int AT_EMPTY_PATH = 0x1000;
    private static final int STATX_TYPE = 0x1, STATX_MODE = 0x2, STATX_UID = 0x8;
    private static final int ENOENT = 2, EACCES = 13, ELOOP = 40;

    /** struct statx (uapi/linux/stat.h): the fields read here; the whole struct is 256 bytes. */
    private static final long STATX_SIZE = 256, STX_UID = 20, STX_MODE = 28;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    private static final MethodHandle OPEN = call("open", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT),
            CAPTURE_ERRNO, Linker.Option.firstVariadicArg(2)); // open(path, flags, ...): the mode is variadic
    private static final MethodHandle STATX = call("statx",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS), CAPTURE_ERRNO);
    private static final MethodHandle READ = call("read", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG),
            CAPTURE_ERRNO);
    private static final MethodHandle CLOSE = call("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle GETEUID = call("geteuid", FunctionDescriptor.of(JAVA_INT));

    private PrivateFiles() {}

    /** The file exists but fails a check (owner, mode, type, link): refused, as opposed to unreadable or missing. */
    public static final class UnsafeFileException extends IOException {
        public UnsafeFileException(String message) {
            super(message);
        }
    }

    /** The text of secret file {@code file} (at most 1 MiB, longer is an error), checked as above; {@code what} names it in errors ("job secret file"). */
    public static String read(Path file, String what) throws IOException {
        return new String(readChecked(file, what, true), StandardCharsets.UTF_8);
    }

    /**
     * The text of {@code file} (at most 64 MiB, longer is an error), a file others may read but only its owner (root or this process's
     * user) may change, and not a symbolic link: a gateway config.
     */
    public static String readTrusted(Path file, String what) throws IOException {
        return new String(readChecked(file, what, false), StandardCharsets.UTF_8);
    }

    private static byte[] readChecked(Path file, String what, boolean secret) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = arena.allocate(CAPTURE);
            MemorySegment path = arena.allocateFrom(file.toString());
            int fd = (int) OPEN.invokeExact(errno, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0);
            if (fd < 0) {
                int e = (int) ERRNO.get(errno, 0L);
                if (e == ENOENT) throw new IOException(what + " " + file + " not found");
                if (e == ELOOP) throw symlink(file, what, secret);
                if (e == EACCES) throw new IOException(what + " " + file + " cannot be read: permission denied");
                throw new IOException(what + " " + file + " cannot be opened (errno " + e + ")");
            }
            try {
                checkDescriptor(fd, file, what, secret, arena, errno);
                checkDirectories(file, what);
                return readAll(fd, file, what, secret ? MAX_SECRET_BYTES : MAX_TRUSTED_BYTES, arena, errno);
            } finally {
                int ignored = (int) CLOSE.invokeExact(fd);
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("libc call failed", t);
        }
    }

    private static void checkDescriptor(int fd, Path file, String what, boolean secret, Arena arena, MemorySegment errno)
            throws Throwable {
        MemorySegment stx = arena.allocate(STATX_SIZE, 8);
        int rc = (int) STATX.invokeExact(errno, fd, arena.allocateFrom(""), AT_EMPTY_PATH,
                STATX_TYPE | STATX_MODE | STATX_UID, stx);
        if (rc != 0) {
            throw new IOException(what + " " + file + " cannot be checked: statx failed (errno " + ERRNO.get(errno, 0L) + ")");
        }
        int mode = Short.toUnsignedInt(stx.get(JAVA_SHORT, STX_MODE));
        int uid = stx.get(JAVA_INT, STX_UID);
        if ((mode & S_IFMT) != S_IFREG) throw new UnsafeFileException(what + " " + file + " is not a regular file");
        String permissions = permissionString(mode);
        if (secret && (mode & GROUP_OR_OTHERS_ANY) != 0) {
            throw new UnsafeFileException(what + " " + file + " is accessible by group or others (permissions "
                    + permissions + "); it must be private to its owner: chmod 600 " + file);
        }
        if (!secret && (mode & GROUP_OR_OTHERS_WRITE) != 0) {
            throw new UnsafeFileException(what + " " + file + " is writable by group or others (permissions "
                    + permissions + "); only its owner may change it: chmod go-w " + file);
        }
        int me = effectiveUid();
        if (uid != me && uid != 0) {
            throw new UnsafeFileException(what + " " + file + " is owned by uid " + Integer.toUnsignedString(uid)
                    + ", not by this process's user (uid " + Integer.toUnsignedString(me) + ", "
                    + System.getProperty("user.name") + ") or root");
        }
    }

    /**
     * Refuses {@code file} when a directory above it may be written by anyone but root and this process's user (see
     * the class comment). Checked after the file was opened and found good, so that a missing or unsafe file is
     * reported as such first. The check is by path: it needs no descriptor, since a directory that is safe now could
     * only have been unsafe before by its owner's (or root's) own doing.
     */
    static void checkDirectories(Path file, String what) throws IOException {
        Path absolute = file.toAbsolutePath();
        Set<Path> directories = new LinkedHashSet<>();
        for (Path d = absolute.getParent(); d != null; d = d.getParent()) directories.add(d);
        // A symbolic link on the way leads elsewhere: the directories above its target decide too.
        for (Path d = absolute.getParent().toRealPath(); d != null; d = d.getParent()) directories.add(d);
        int me = effectiveUid();
        for (Path d : directories) {
            Map<String, Object> a = Files.readAttributes(d, "unix:mode,uid", LinkOption.NOFOLLOW_LINKS);
            int mode = (Integer) a.get("mode"), uid = (Integer) a.get("uid");
            if ((mode & S_IFMT) == S_IFLNK) continue; // the link itself: its directory (checked) decides who may change it
            if (uid != me && uid != 0) {
                throw new UnsafeFileException(what + " " + file + " lies in directory " + d + ", which is owned by uid "
                        + Integer.toUnsignedString(uid) + ", not by this process's user (uid " + Integer.toUnsignedString(me)
                        + ") or root: its owner could replace the file; keep it in a directory owned by you or root");
            }
            if ((mode & GROUP_OR_OTHERS_WRITE) != 0 && (mode & S_ISVTX) == 0) {
                throw new UnsafeFileException(what + " " + file + " lies in directory " + d + ", which is writable by group"
                        + " or others (permissions " + permissionString(mode) + "): they could replace the file; chmod go-w "
                        + d + " (or move the file to a directory only its owner may change)");
            }
        }
    }

    /** This process's effective user id, which owns what it may trust besides root's. */
    private static int effectiveUid() {
        try {
            return (int) GETEUID.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException("geteuid failed", t);
        }
    }

    /** Everything up to the end of the file; a file longer than {@code max} is an error (never a cut-off text). */
    private static byte[] readAll(int fd, Path file, String what, int max, Arena arena, MemorySegment errno) throws Throwable {
        MemorySegment chunk = arena.allocate(CHUNK);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        while (true) {
            long n = (long) READ.invokeExact(errno, fd, chunk, (long) CHUNK);
            if (n == 0) return out.toByteArray();
            if (n < 0) {
                int e = (int) ERRNO.get(errno, 0L);
                if (e == 4) continue; // EINTR
                throw new IOException(what + " " + file + " cannot be read (errno " + e + ")");
            }
            if (out.size() + n > max) throw new IOException(what + " " + file + " is larger than " + max + " bytes");
            out.write(chunk.asSlice(0, n).toArray(JAVA_BYTE));
        }
    }

    /** As {@code ls -l} writes the permission bits, e.g. {@code rw-r-----}. */
    static String permissionString(int mode) {
        StringBuilder s = new StringBuilder(9);
        String letters = "rwx";
        for (int bit = 8; bit >= 0; bit--) {
            s.append((mode & (1 << bit)) != 0 ? letters.charAt((8 - bit) % 3) : '-');
        }
        return s.toString();
    }

    private static IOException symlink(Path file, String what, boolean secret) {
        return new UnsafeFileException(what + " " + file + " is a symbolic link; give the file itself, "
                + (secret ? "private to its owner (chmod 600)" : "writable by its owner only (chmod go-w)"));
    }

    private static MethodHandle call(String name, FunctionDescriptor descriptor, Linker.Option... options) {
        MemorySegment symbol = LIBC.find(name).orElseThrow(() -> new UnsatisfiedLinkError("libc has no " + name));
        return LINKER.downcallHandle(symbol, descriptor, options);
    }
}
