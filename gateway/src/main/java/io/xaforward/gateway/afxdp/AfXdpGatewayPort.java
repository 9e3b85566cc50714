package io.xaforward.gateway.afxdp;

import io.xaforward.dataplane.BpfMap;
import io.xaforward.dataplane.BpfObject;
import io.xaforward.dataplane.XdpAttachment;
import io.xaforward.gateway.GatewayConfig;
import io.xaforward.gateway.PortTraffic;
import io.xaforward.dataplane.xsk.Umem;
import io.xaforward.dataplane.xsk.XskConfig;
import io.xaforward.dataplane.xsk.XskSocket;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;

/**
 * One port of the AF_XDP gateway: an AF_XDP socket on queue 0 of the interface plus {@code xsk_all.bpf.o}, which
 * hands every XAF-looking frame of the interface to that socket and passes everything else to the kernel. Each port
 * has its own UMEM, so a forwarded frame is copied once from the ingress port's UMEM into a TX frame of the egress
 * port's UMEM.
 *
 * <p>Segments over UMEM frames are cached per frame (received data always starts at the same headroom, transmit
 * frames at their base), so steady-state forwarding allocates nothing. Used by one thread after construction.
 */
final class AfXdpGatewayPort implements AutoCloseable {
    static final String PROGRAM_RESOURCE = "bpf/xsk_all.bpf.o";
    static final int QUEUE = 0;

    final GatewayConfig.PortConfig config;
    final byte[] mac;
    /** The interface's MTU: the most bytes a frame may carry after its Ethernet header. */
    final int mtu;
    /**
     * Largest frame this engine carries: one UMEM frame, less the headroom the kernel keeps in front of received data
     * (AF_XDP without multi-buffer support: a frame never spans two UMEM frames).
     */
    static final int MAX_FRAME = Umem.FRAME_SIZE - Umem.KERNEL_HEADROOM;
    final XskSocket socket;
    private final MemorySegment umem;
    private final BpfObject program;
    private final XdpAttachment attachment;
    private final MemorySegment[] slices;
    private final long[] sliceStarts;
    /** Frames submitted to the TX ring since the last flush. */
    int pendingTx;
    /** XAF frames received on this port and frames sent out of it (the XDP program's per-port figures). */
    final PortTraffic traffic = new PortTraffic();

    /** Opens the socket, loads the program, registers the socket for queue 0 and attaches the program (native XDP). */
    AfXdpGatewayPort(GatewayConfig.PortConfig config, XskConfig xsk) {
        this.config = config;
        Path sys = Path.of("/sys/class/net", config.iface());
        if (!Files.isDirectory(sys)) throw new IllegalArgumentException("interface " + config.iface() + " does not exist in this namespace");
        try {
            mac = HexFormat.ofDelimiter(":").parseHex(Files.readString(sys.resolve("address")).strip());
            mtu = Integer.parseInt(Files.readString(sys.resolve("mtu")).strip());
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + sys, e);
        }
        if (mtu + 14 > MAX_FRAME) {
            throw new IllegalArgumentException("interface " + config.iface() + " has MTU " + mtu + ", but the AF_XDP gateway"
                    + " carries frames of at most " + MAX_FRAME + " bytes (one " + Umem.FRAME_SIZE + "-byte UMEM frame less "
                    + Umem.KERNEL_HEADROOM + " bytes of headroom: MTU " + (MAX_FRAME - 14) + "); lower the MTU or use the"
                    + " xdp or relay gateway, which carry jumbo frames");
        }
        XskSocket s = XskSocket.open(config.iface(), QUEUE, xsk);
        BpfObject obj = null;
        try {
            obj = BpfObject.openResource(PROGRAM_RESOURCE).load();
            obj.map("xsks").updateInt(QUEUE, s.fd(), BpfMap.ANY);
            attachment = XdpAttachment.attach(obj.programFd("xsk_all"), config.iface(), false);
        } catch (RuntimeException e) {
            if (obj != null) obj.close();
            s.close();
            throw e;
        }
        socket = s;
        program = obj;
        umem = s.umem();
        int frames = (int) (umem.byteSize() / Umem.FRAME_SIZE);
        slices = new MemorySegment[frames];
        sliceStarts = new long[frames];
        // Build every slice now, where the data will start (after the kernel's headroom on receive, at the base on
        // transmit), so that forwarding allocates nothing even before every frame has been used once.
        Umem u = s.frames();
        for (int i = 0; i < u.rxFrames(); i++) frameAt(u.rxFrame(i) + Umem.KERNEL_HEADROOM);
        for (int i = u.rxFrames(); i < frames; i++) frameAt((long) i * Umem.FRAME_SIZE);
    }

    /** The UMEM from {@code offset} to the end of its frame (cached per frame). */
    MemorySegment frameAt(long offset) {
        int index = (int) (offset / Umem.FRAME_SIZE);
        MemorySegment s = slices[index];
        if (s == null || sliceStarts[index] != offset) {
            s = umem.asSlice(offset, Umem.frameBase(offset) + Umem.FRAME_SIZE - offset);
            slices[index] = s;
            sliceStarts[index] = offset;
        }
        return s;
    }

    /** Sends everything submitted so far and reaps completions. */
    void flush() {
        socket.flush();
        pendingTx = 0;
    }

    String describe() {
        return config.iface() + " (" + config.form().configName() + ", slot " + config.slot() + "): AF_XDP queue " + QUEUE
                + (socket.isZeroCopy() ? " zero-copy" : " copy mode") + ", xsk_all " + attachment.mode().name().toLowerCase();
    }

    /** Detaches the program, unloads it and closes the socket. */
    @Override
    public void close() {
        try {
            attachment.detach();
        } finally {
            try {
                program.close();
            } finally {
                socket.close();
            }
        }
    }
}
