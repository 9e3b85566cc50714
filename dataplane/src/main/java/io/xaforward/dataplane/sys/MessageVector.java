package io.xaforward.dataplane.sys;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A preallocated array of {@code struct mmsghdr} for sendmmsg(2) and recvmmsg(2), each message with one
 * {@code struct iovec}, written and read in place by index (a flyweight: nothing is allocated after
 * {@link #allocate}). Addresses of names, buffers and control data are set as raw addresses so that per-call updates
 * take no slices. Layouts are x86-64 / LP64 (checked against the C headers by SocketStructsTest).
 */
public final class MessageVector {
    /** {@code struct msghdr} field offsets and {@code struct mmsghdr}'s {@code msg_len} and size. */
    static final int MSG_NAME = 0, MSG_NAMELEN = 8, MSG_IOV = 16, MSG_IOVLEN = 24, MSG_CONTROL = 32,
            MSG_CONTROLLEN = 40, MMSG_LEN = 56, MMSGHDR_SIZE = 64;
    /** {@code struct iovec}: base pointer, then length. */
    static final int IOV_BASE = 0, IOV_LEN = 8, IOVEC_SIZE = 16;

    private final int count;
    private final MemorySegment messages;
    private final MemorySegment iovecs;
    /** The vector from message i on, for the syscalls that take a first message (sliced once, here). */
    private final MemorySegment[] from;

    private MessageVector(int count, MemorySegment messages, MemorySegment iovecs) {
        this.count = count;
        this.messages = messages;
        this.iovecs = iovecs;
        this.from = new MemorySegment[count];
        for (int i = 0; i < count; i++) {
            from[i] = messages.asSlice((long) i * MMSGHDR_SIZE);
            messages.set(ValueLayout.ADDRESS, (long) i * MMSGHDR_SIZE + MSG_IOV, iovecs.asSlice((long) i * IOVEC_SIZE, IOVEC_SIZE));
            messages.set(ValueLayout.JAVA_LONG, (long) i * MMSGHDR_SIZE + MSG_IOVLEN, 1);
        }
    }

    /** {@code count} zeroed messages in {@code arena}, each already pointing at its own iovec. */
    public static MessageVector allocate(Arena arena, int count) {
        if (count < 1) throw new IllegalArgumentException("a message vector needs at least one message, not " + count);
        return new MessageVector(count, arena.allocate((long) count * MMSGHDR_SIZE, 8),
                arena.allocate((long) count * IOVEC_SIZE, 8));
    }

    public int count() {
        return count;
    }

    /** The vector from message {@code i} on: pass it with a count to sendmmsg/recvmmsg. */
    public MemorySegment from(int i) {
        return from[i];
    }

    /** Sets message {@code i}'s one buffer: {@code length} bytes at {@code buffer}. */
    public void buffer(int i, MemorySegment buffer, long length) {
        iovecs.set(ValueLayout.ADDRESS, iov(i) + IOV_BASE, buffer);
        bufferLength(i, length);
    }

    /** Sets the length of message {@code i}'s buffer (its start unchanged). */
    public void bufferLength(int i, long length) {
        iovecs.set(ValueLayout.JAVA_LONG, iov(i) + IOV_LEN, length);
    }

    /** Points message {@code i}'s name (the socket address) at {@code address}, {@code length} bytes. */
    public void name(int i, long address, int length) {
        messages.set(ValueLayout.JAVA_LONG, msg(i) + MSG_NAME, address);
        nameLength(i, length);
    }

    /** Sets message {@code i}'s name length: the room before recvmmsg, the address's length before sendmmsg. */
    public void nameLength(int i, int length) {
        messages.set(ValueLayout.JAVA_INT, msg(i) + MSG_NAMELEN, length);
    }

    /** Points message {@code i}'s control data at {@code address}, {@code length} bytes; address 0 for none. */
    public void control(int i, long address, long length) {
        messages.set(ValueLayout.JAVA_LONG, msg(i) + MSG_CONTROL, address);
        controlLength(i, length);
    }

    /** Sets message {@code i}'s control length: the room before recvmmsg. */
    public void controlLength(int i, long length) {
        messages.set(ValueLayout.JAVA_LONG, msg(i) + MSG_CONTROLLEN, length);
    }

    /** The control bytes the kernel wrote for received message {@code i}. */
    public long controlLength(int i) {
        return messages.get(ValueLayout.JAVA_LONG, msg(i) + MSG_CONTROLLEN);
    }

    /** The bytes received into (or sent from) message {@code i}: {@code msg_len}. */
    public int messageLength(int i) {
        return messages.get(ValueLayout.JAVA_INT, msg(i) + MMSG_LEN);
    }

    private static long msg(int i) {
        return (long) i * MMSGHDR_SIZE;
    }

    private static long iov(int i) {
        return (long) i * IOVEC_SIZE;
    }
}
