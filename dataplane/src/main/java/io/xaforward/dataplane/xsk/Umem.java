package io.xaforward.dataplane.xsk;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The packet memory an AF_XDP socket shares with the kernel: one page-aligned segment cut into fixed 2048-byte
 * frames (aligned mode, so a frame's base is any address inside it rounded down to a multiple of the frame size).
 *
 * <p>Frames {@code [0, rxFrames)} circulate between the FILL and RX rings and are recycled straight back to FILL;
 * the rest serve transmission and are handed out from a preallocated free stack, returning to it when the
 * COMPLETION ring reports them sent. Keeping the two pools apart means a burst of transmissions can never starve
 * reception and vice versa. Not thread-safe.
 */
public final class Umem {
    /** Bytes per frame; also the registered chunk size. */
    public static final int FRAME_SIZE = 2048;
    /** Headroom the kernel keeps in front of received data in every frame (XDP_PACKET_HEADROOM). */
    public static final int KERNEL_HEADROOM = 256;

    private final MemorySegment memory;
    private final int rxFrames, txFrames;
    private final long[] freeTx;
    private int freeTxCount;

    Umem(Arena arena, int rxFrames, int txFrames) {
        if (rxFrames < 0 || txFrames < 0 || (long) rxFrames + txFrames == 0) {
            throw new IllegalArgumentException("UMEM needs frames: rx " + rxFrames + ", tx " + txFrames);
        }
        this.rxFrames = rxFrames;
        this.txFrames = txFrames;
        this.memory = arena.allocate((long) (rxFrames + txFrames) * FRAME_SIZE, 4096);
        this.freeTx = new long[txFrames];
        for (int i = txFrames - 1; i >= 0; i--) freeTx[freeTxCount++] = (long) (rxFrames + i) * FRAME_SIZE;
    }

    /** The whole UMEM; descriptor addresses are offsets into it. */
    public MemorySegment memory() { return memory; }

    public int rxFrames() { return rxFrames; }
    public int txFrames() { return txFrames; }

    /** UMEM offset of receive frame {@code i} (0 .. rxFrames-1). */
    public long rxFrame(int i) { return (long) i * FRAME_SIZE; }

    /** Base of the frame that contains UMEM offset {@code addr}. */
    public static long frameBase(long addr) { return addr & ~(long) (FRAME_SIZE - 1); }

    /** Transmit frames ready to be claimed. */
    public int freeTxFrames() { return freeTxCount; }

    /** Takes a free transmit frame; its UMEM offset, or -1 when all are in flight. */
    long takeTxFrame() {
        return freeTxCount == 0 ? -1 : freeTx[--freeTxCount];
    }

    /** Returns a transmit frame (any offset inside it) to the free stack. */
    void returnTxFrame(long addr) {
        long base = frameBase(addr);
        if (base < (long) rxFrames * FRAME_SIZE || base >= memory.byteSize() || freeTxCount == freeTx.length) {
            throw new IllegalStateException("UMEM offset " + addr + " is not a transmit frame in flight");
        }
        freeTx[freeTxCount++] = base;
    }
}
