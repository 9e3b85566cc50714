package io.xaforward.dataplane.xsk;

/**
 * Sizes and mode of an AF_XDP socket. Every ring size must be a power of two (the kernel masks indices with
 * {@code size - 1}); this is checked here, before any socket exists.
 *
 * <p>The defaults follow the field notes: a FILL ring of 16384 frames, because 4096 dropped 0.01-4% of frames
 * while the JVM thread was descheduled and 16384 dropped none; every receive frame sits in the FILL ring, so
 * {@code rxFrames == fillRingSize}. TX frames are bounded by the COMPLETION ring so completions can never overflow.
 *
 * @param rxRingSize         RX descriptors (received frames waiting for user space)
 * @param txRingSize         TX descriptors (frames waiting for the kernel)
 * @param fillRingSize       FILL entries (empty frames offered to the kernel for reception)
 * @param completionRingSize COMPLETION entries (transmitted frames handed back)
 * @param rxFrames           UMEM frames dedicated to reception, at most {@code fillRingSize}
 * @param txFrames           UMEM frames dedicated to transmission, at most {@code completionRingSize}
 * @param zeroCopy           bind with XDP_ZEROCOPY (fails clearly where the driver lacks it) instead of XDP_COPY
 */
public record XskConfig(int rxRingSize, int txRingSize, int fillRingSize, int completionRingSize,
                        int rxFrames, int txFrames, boolean zeroCopy) {

    public static final int MAX_RING_SIZE = 1 << 20;

    public XskConfig {
        ring("rxRingSize", rxRingSize);
        ring("txRingSize", txRingSize);
        ring("fillRingSize", fillRingSize);
        ring("completionRingSize", completionRingSize);
        if (rxFrames < 1 || rxFrames > fillRingSize) {
            throw new IllegalArgumentException("rxFrames " + rxFrames + " must be 1.." + fillRingSize + " (fillRingSize)");
        }
        if (txFrames < 1 || txFrames > completionRingSize) {
            throw new IllegalArgumentException("txFrames " + txFrames + " must be 1.." + completionRingSize + " (completionRingSize)");
        }
    }

    private static void ring(String name, int size) {
        if (size < 1 || size > MAX_RING_SIZE || Integer.bitCount(size) != 1) {
            throw new IllegalArgumentException(name + " " + size + " is not a power of two in 1.." + MAX_RING_SIZE
                    + " (the kernel masks ring indices with size-1)");
        }
    }

    /** RX 16384, TX 4096, FILL 16384, COMPLETION 4096, all frames in use (40 MiB of UMEM), copy mode. */
    public static XskConfig defaults() {
        return new XskConfig(16384, 4096, 16384, 4096, 16384, 4096, false);
    }

    /** Small rings for tests and control traffic: 2048 each way (8 MiB of UMEM). */
    public static XskConfig small() {
        return new XskConfig(2048, 2048, 2048, 2048, 2048, 2048, false);
    }

    public XskConfig withZeroCopy(boolean zc) {
        return new XskConfig(rxRingSize, txRingSize, fillRingSize, completionRingSize, rxFrames, txFrames, zc);
    }

    /** Same sizes for the RX and FILL rings, all frames used for reception. */
    public XskConfig withRxRings(int size) {
        return new XskConfig(size, txRingSize, size, completionRingSize, size, txFrames, zeroCopy);
    }

    /** Same sizes for the TX and COMPLETION rings, all frames used for transmission. */
    public XskConfig withTxRings(int size) {
        return new XskConfig(rxRingSize, size, fillRingSize, size, rxFrames, size, zeroCopy);
    }
}
