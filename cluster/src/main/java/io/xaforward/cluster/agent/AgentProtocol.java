package io.xaforward.cluster.agent;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The wire format between {@code xaf agent} and its training process on the Unix socket (docs/PYTORCH.md,
 * "Protocol"). Every frame is a little-endian {@code u32} length (the bytes that follow it) and a body:
 *
 * <pre>
 * request: u8 type, u32 id, fields of the type
 *   HELLO      u16 version, u32 pid
 *   ALLREDUCE  u64 offset, u32 count, u8 op (0 sum, 1 average), u16 name length, name (UTF-8)
 *   BROADCAST  u64 offset, u32 count, u32 root, u16 name length, name (UTF-8)
 *   BARRIER    (nothing)
 *   BYE        (nothing)
 * reply:   u8 type (the request's; 0 when the request could not be read), u32 id, u8 status (0 ok, 1 error), then
 *   HELLO ok   u32 rank, u32 size, u32 local rank, u64 shared segment bytes, u16 path length, path (UTF-8)
 *   error      u16 message length, message (UTF-8)
 * </pre>
 *
 * Offsets are bytes into the shared segment (a multiple of 4), counts are 4-byte words (floats). Strict on purpose:
 * a field out of range, trailing bytes or a name that is not UTF-8 is an error naming the problem, never a guess.
 */
public final class AgentProtocol {
    private AgentProtocol() {}

    public static final int VERSION = 1;
    /** Longest frame either side sends (length field excluded): a request's name keeps it far below. */
    public static final int MAX_FRAME = 4096;
    /** Longest collective name; names only label errors, so they stay short. */
    public static final int MAX_NAME = 1024;
    /** type + id: the bytes every request starts with. */
    public static final int HEADER = 5;

    public static final byte HELLO = 1, ALLREDUCE = 2, BROADCAST = 3, BARRIER = 4, BYE = 5;
    public static final byte OK = 0, ERROR = 1;
    public static final int OP_SUM = 0, OP_AVERAGE = 1;

    /** The name of a request type in messages and logs. */
    public static String typeName(int type) {
        return switch (type) {
            case HELLO -> "hello";
            case ALLREDUCE -> "allreduce";
            case BROADCAST -> "broadcast";
            case BARRIER -> "barrier";
            case BYE -> "bye";
            default -> "type " + type;
        };
    }

    /** A well-framed request whose content is wrong: answered with an error, the connection stays usable. */
    public static final class BadRequest extends Exception {
        public final int type;
        public final int id;

        public BadRequest(int type, int id, String message) {
            super(message);
            this.type = type;
            this.id = id;
        }
    }

    /** One parsed request. {@code offset}/{@code count}/{@code arg} mean what its type says (arg: op or root). */
    public record Request(byte type, int id, int version, long pid, long offset, int count, int arg, String name) {
        public long bytes() {
            return (long) count * Float.BYTES;
        }

        public String describe() {
            return switch (type) {
                case ALLREDUCE -> "allreduce '" + name + "' of " + count + " floats ("
                        + (arg == OP_SUM ? "sum" : "average") + ")";
                case BROADCAST -> "broadcast '" + name + "' of " + count + " words from rank " + arg;
                default -> typeName(type);
            };
        }
    }

    /**
     * Parses one request body (the bytes after the length field). {@code body} is read from its position to its
     * limit, little-endian.
     */
    public static Request parse(ByteBuffer body) throws BadRequest {
        body.order(ByteOrder.LITTLE_ENDIAN);
        int size = body.remaining();
        if (size < HEADER) {
            throw new BadRequest(0, 0, "a frame of " + size + " bytes is shorter than the " + HEADER
                    + "-byte request header (u8 type, u32 id)");
        }
        byte type = body.get();
        int id = body.getInt();
        Request r = switch (type) {
            case HELLO -> {
                need(body, type, id, 6, "u16 version, u32 pid");
                int version = Short.toUnsignedInt(body.getShort());
                long pid = Integer.toUnsignedLong(body.getInt());
                yield new Request(type, id, version, pid, 0, 0, 0, "");
            }
            case ALLREDUCE -> {
                need(body, type, id, 8 + 4 + 1 + 2, "u64 offset, u32 count, u8 op, u16 name length");
                long offset = body.getLong();
                long count = Integer.toUnsignedLong(body.getInt());
                int op = Byte.toUnsignedInt(body.get());
                if (op != OP_SUM && op != OP_AVERAGE) {
                    throw new BadRequest(type, id, "allreduce op " + op + " is unknown (0 sum, 1 average)");
                }
                String name = name(body, type, id);
                yield new Request(type, id, 0, 0, offset, count(type, id, count), op, name);
            }
            case BROADCAST -> {
                need(body, type, id, 8 + 4 + 4 + 2, "u64 offset, u32 count, u32 root, u16 name length");
                long offset = body.getLong();
                long count = Integer.toUnsignedLong(body.getInt());
                int root = body.getInt();
                String name = name(body, type, id);
                yield new Request(type, id, 0, 0, offset, count(type, id, count), root, name);
            }
            case BARRIER, BYE -> new Request(type, id, 0, 0, 0, 0, 0, "");
            default -> throw new BadRequest(type, id, "request type " + Byte.toUnsignedInt(type)
                    + " is unknown (1 hello, 2 allreduce, 3 broadcast, 4 barrier, 5 bye)");
        };
        if (body.hasRemaining()) {
            throw new BadRequest(type, id, typeName(type) + " request has " + body.remaining() + " trailing bytes");
        }
        return r;
    }

    private static int count(byte type, int id, long count) throws BadRequest {
        if (count > Integer.MAX_VALUE) {
            throw new BadRequest(type, id, typeName(type) + " count " + count + " exceeds " + Integer.MAX_VALUE);
        }
        return (int) count;
    }

    private static void need(ByteBuffer body, byte type, int id, int bytes, String fields) throws BadRequest {
        if (body.remaining() < bytes) {
            throw new BadRequest(type, id, typeName(type) + " request needs " + bytes + " bytes (" + fields
                    + ") after its header, has " + body.remaining());
        }
    }

    private static String name(ByteBuffer body, byte type, int id) throws BadRequest {
        int length = Short.toUnsignedInt(body.getShort());
        if (length > MAX_NAME) {
            throw new BadRequest(type, id, typeName(type) + " name of " + length + " bytes exceeds " + MAX_NAME);
        }
        if (body.remaining() < length) {
            throw new BadRequest(type, id, typeName(type) + " name of " + length + " bytes, only "
                    + body.remaining() + " follow");
        }
        ByteBuffer bytes = body.slice(body.position(), length);
        body.position(body.position() + length);
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(bytes).toString();
        } catch (CharacterCodingException e) {
            throw new BadRequest(type, id, typeName(type) + " name is not UTF-8");
        }
    }

    /** A reply frame, length field included. */
    public static ByteBuffer ok(int type, int id) {
        return reply(type, id, OK, 0).flip();
    }

    public static ByteBuffer error(int type, int id, String message) {
        byte[] text = message.getBytes(StandardCharsets.UTF_8);
        if (text.length > MAX_FRAME - 16) text = Arrays.copyOf(text, MAX_FRAME - 16);
        ByteBuffer b = reply(type, id, ERROR, 2 + text.length);
        b.putShort((short) text.length).put(text);
        return b.flip();
    }

    public static ByteBuffer hello(int id, int rank, int size, int localRank, long shmBytes, String shmPath) {
        byte[] path = shmPath.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = reply(HELLO, id, OK, 4 + 4 + 4 + 8 + 2 + path.length);
        b.putInt(rank).putInt(size).putInt(localRank).putLong(shmBytes).putShort((short) path.length).put(path);
        return b.flip();
    }

    private static ByteBuffer reply(int type, int id, byte status, int extra) {
        int length = 1 + 4 + 1 + extra;
        ByteBuffer b = ByteBuffer.allocate(4 + length).order(ByteOrder.LITTLE_ENDIAN);
        return b.putInt(length).put((byte) type).putInt(id).put(status);
    }
}
