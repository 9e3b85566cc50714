package io.xaforward.testbed;

/**
 * The emulated wide-area link of a topology: every frame between gateway {@link #gateway()} and data center
 * {@link #datacenter()} crosses a namespace of its own (a Linux bridge with two veth ports) whose kernel shapes
 * each direction with HTB to {@link #rate()}, queueing at most {@link #queuePackets()} frames per direction.
 *
 * <p>Frames reach that namespace as ordinary skbs in every gateway mode (the XDP gateway's redirected frames are
 * turned into skbs by the XDP_PASS program on the WAN's gateway-side port), so no mode can bypass the shaping. The
 * kernel has no netem, so delay, jitter, loss and reordering ({@link #impairment()}) come from a delay line, a process
 * in that namespace that replaces the bridge when any of them is set; rate and queue stay with HTB.
 *
 * @param rate          the rate as written in the file (e.g. {@code 200mbit})
 * @param bitsPerSecond the same rate in bit/s
 * @param queuePackets  the pfifo limit under each direction's HTB class
 * @param mtu           the MTU of the WAN's links (the gateway's port into the DC included); the DC's own MTU when the
 *                      file gives none. Frames larger than it do not cross the WAN, whatever the DC's hosts use
 * @param impairment    delay, jitter, loss and reordering; {@link WanImpairment#NONE} when the file gives none
 */
public record WanLink(String gateway, String datacenter, String rate, long bitsPerSecond, int queuePackets, int mtu,
                      WanImpairment impairment) {
    /** Queue length when the file gives none: the kernel's default transmit queue length. */
    public static final int DEFAULT_QUEUE_PACKETS = 1000;

    /** A WAN that shapes only (no delay line). */
    public WanLink(String gateway, String datacenter, String rate, long bitsPerSecond, int queuePackets, int mtu) {
        this(gateway, datacenter, rate, bitsPerSecond, queuePackets, mtu, WanImpairment.NONE);
    }
}
