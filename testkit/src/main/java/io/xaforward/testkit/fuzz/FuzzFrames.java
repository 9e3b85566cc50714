package io.xaforward.testkit.fuzz;

import io.xaforward.protocol.FrameWriter;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.OuterAddressing;
import io.xaforward.protocol.PayloadIntegrity;
import io.xaforward.protocol.XafHeader;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;

/**
 * The fuzzer's frames: valid "golden" frames of every ingress form addressed to a route of every egress form (the
 * nine form pairs, several payload sizes, UDP source ports and source ranks of several flows), and a seeded stream of frames derived from them: bit flips, byte writes
 * aimed at the headers, targeted XAF field values (other routes, wrong job or token, hop limits 0 to 2, broken
 * magic/version/length), truncations at every byte from the end of Ethernet to the end of the XAF header (so at
 * every header boundary, and inside the UDP and ID headers), Ethernet padding, and random bytes behind each
 * EtherType. The same seed gives the same frames. Frames are at least 14 bytes: the kernel refuses shorter ones
 * to XDP (a NIC never delivers them).
 */
public final class FuzzFrames {
    /**
     * Routes of the fuzz setup: one per egress form (index = form code), one fenced off from the fuzz port, and one that
     * leaves by the fuzz port itself without naming it as ingress (a hairpin, dropped).
     */
    public static final int NET_TO_IPV4 = 0x0A000001, NET_TO_IPV6 = 0x0A000002, NET_TO_ID = 0x0A000003, NET_FENCED = 0x0A0000F0,
            NET_HAIRPIN = 0x0A0000F1, NET_UNKNOWN = 0x0A0000FF;
    public static final int JOB = 77, TOKEN = 0xC0FFEE11;
    /** Room for the largest golden frame (IPv6, 8941 payload bytes: 9051) plus padding. */
    public static final int MAX_FRAME = 9200;
    /**
     * The egress MTU of the fuzz setup, jumbo frames: IPv4 carries at most 8924 payload bytes through it, IPv6 8904,
     * the ID form 8940. Frames this large reach the XDP program as multi-buffer frames (headers in the first buffer,
     * the payload continuing in fragments), so truncating, padding and forwarding them is fuzzed too.
     */
    static final int EGRESS_MTU = 9000;
    /** Payload sizes of the golden frames: small ones, and each egress form's largest that fits {@link #EGRESS_MTU} and one byte more. */
    static final int[] PAYLOAD_LENGTHS = {0, 1, 64, 333, 1400, 8904, 8905, 8924, 8925, 8940, 8941};
    static final byte[] PEER_MAC = {2, 0, 0, 0, 0, 1}, PORT_MAC = {2, 0, 0, 0, 0, 2};

    /** How a frame was made; the report counts frames per kind. */
    public enum Kind { GOLDEN, BIT_FLIPS, HEADER_BYTES, FIELD, TRUNCATED, PADDED, RANDOM }

    /** A valid frame: the form it arrives in and the route (egress form) it names. */
    public record Golden(NetworkForm ingress, int networkId, byte[] bytes) {}

    private final List<Golden> golden;
    private final SplittableRandom random;
    private Kind kind;

    public FuzzFrames(long seed) {
        this.random = new SplittableRandom(seed);
        this.golden = buildGolden(new Random(seed));
    }

    /** The network id of the route whose egress form is {@code form}. */
    public static int networkIdFor(NetworkForm form) {
        return switch (form) {
            case IPV4 -> NET_TO_IPV4;
            case IPV6 -> NET_TO_IPV6;
            case ID -> NET_TO_ID;
        };
    }

    public List<Golden> golden() { return golden; }

    /** The kind of the frame {@link #next} made last. */
    public Kind kind() { return kind; }

    /** Writes the next frame into {@code frame} (at least {@link #MAX_FRAME} bytes) and returns its length. */
    public int next(byte[] frame) {
        Golden g = golden.get(random.nextInt(golden.size()));
        int len = g.bytes().length;
        System.arraycopy(g.bytes(), 0, frame, 0, len);
        int headerEnd = g.ingress().outerHeaderLength() + XafHeader.LENGTH;
        int pick = random.nextInt(100);
        if (pick < 8) {
            kind = Kind.GOLDEN;
        } else if (pick < 30) {
            kind = Kind.BIT_FLIPS;
            int flips = 1 + random.nextInt(3);
            for (int i = 0; i < flips; i++) {
                int at = random.nextInt(4) == 0 ? random.nextInt(len) : random.nextInt(Math.min(len, headerEnd));
                frame[at] ^= (byte) (1 << random.nextInt(8));
            }
        } else if (pick < 45) {
            kind = Kind.HEADER_BYTES;
            int writes = 1 + random.nextInt(2);
            for (int i = 0; i < writes; i++) frame[random.nextInt(Math.min(len, headerEnd))] = interestingByte();
        } else if (pick < 65) {
            kind = Kind.FIELD;
            mutateField(frame, g.ingress().outerHeaderLength());
        } else if (pick < 85) {
            kind = Kind.TRUNCATED;
            if (random.nextInt(3) == 0) mutateField(frame, g.ingress().outerHeaderLength());
            // every cut from the end of Ethernet to the end of the XAF header, or one inside the payload
            len = random.nextInt(5) != 0 || len == headerEnd ? 14 + random.nextInt(headerEnd - 14 + 1)
                    : headerEnd + random.nextInt(len - headerEnd);
        } else if (pick < 92) {
            kind = Kind.PADDED;
            int pad = 1 + random.nextInt(Math.min(64, MAX_FRAME - len));
            for (int i = 0; i < pad; i++) frame[len + i] = (byte) random.nextInt(256);
            len += pad;
            if (random.nextBoolean()) mutateField(frame, g.ingress().outerHeaderLength());
        } else {
            kind = Kind.RANDOM;
            len = 14 + random.nextInt(random.nextBoolean() ? 120 : MAX_FRAME - 14);
            for (int i = 0; i < len; i++) frame[i] = (byte) random.nextInt(256);
            int[] etherTypes = {0x0800, 0x86DD, 0x0812, 0x0806, random.nextInt(0x10000)};
            int type = etherTypes[random.nextInt(etherTypes.length)];
            frame[12] = (byte) (type >> 8);
            frame[13] = (byte) type;
            if (random.nextBoolean() && len >= headerEnd) {
                // keep the identifying fields so the random bytes reach the XAF checks
                System.arraycopy(g.bytes(), 12, frame, 12, Math.min(g.ingress().outerHeaderLength(), len) - 12);
            }
        }
        return len;
    }

    private byte interestingByte() {
        byte[] values = {0, 1, 2, (byte) 0x7F, (byte) 0x80, (byte) 0xFF, (byte) 0xFE, 0x30, 0x58, 0x46, (byte) 0xFD, 0x08, 0x11};
        return random.nextInt(4) == 0 ? (byte) random.nextInt(256) : values[random.nextInt(values.length)];
    }

    /** Sets one XAF header field (or an outer length field) to a value that hits a decision or a parser rule. */
    private void mutateField(byte[] frame, int xaf) {
        switch (random.nextInt(12)) {
            case 0, 1 -> putInt(frame, xaf + XafHeader.NETWORK_ID_OFFSET, switch (random.nextInt(5)) {
                case 0 -> NET_TO_IPV4;
                case 1 -> NET_TO_IPV6;
                case 2 -> NET_TO_ID;
                case 3 -> random.nextBoolean() ? NET_FENCED : NET_HAIRPIN;
                default -> random.nextBoolean() ? NET_UNKNOWN : random.nextInt();
            });
            case 2 -> putInt(frame, xaf + XafHeader.JOB_ID_OFFSET, JOB + 1 + random.nextInt(3));
            case 3 -> putInt(frame, xaf + XafHeader.JOB_TOKEN_OFFSET, TOKEN ^ (1 << random.nextInt(32)));
            case 4, 5 -> frame[xaf + XafHeader.HOP_LIMIT_OFFSET] = (byte) (random.nextInt(4) == 0 ? 255 : random.nextInt(3));
            case 6 -> frame[xaf + XafHeader.VERSION_OFFSET] = (byte) random.nextInt(4);
            case 7 -> frame[xaf + XafHeader.HDR_LEN_OFFSET] = (byte) (44 + random.nextInt(9));
            case 8 -> frame[xaf + XafHeader.MAGIC_OFFSET + random.nextInt(2)] ^= (byte) (1 + random.nextInt(255));
            case 9 -> addShort(frame, xaf + XafHeader.PAYLOAD_LEN_OFFSET, random.nextBoolean() ? 1 : -1);
            case 10 -> addShort(frame, outerLengthField(frame), random.nextInt(3) - 1 + (random.nextBoolean() ? 0 : 48));
            default -> frame[xaf + XafHeader.TYPE_OFFSET + random.nextInt(XafHeader.LENGTH - XafHeader.TYPE_OFFSET)] = (byte) random.nextInt(256);
        }
    }

    /** Offset of the outer length field of the frame's form: IPv4 total length, IPv6 payload length, ID length. */
    private static int outerLengthField(byte[] frame) {
        int type = ((frame[12] & 0xFF) << 8) | (frame[13] & 0xFF);
        return switch (type) {
            case 0x0800 -> 14 + 2;
            case 0x86DD -> 14 + 4;
            default -> 14 + 10;
        };
    }

    private static void putInt(byte[] b, int at, int v) {
        b[at] = (byte) (v >>> 24);
        b[at + 1] = (byte) (v >>> 16);
        b[at + 2] = (byte) (v >>> 8);
        b[at + 3] = (byte) v;
    }

    private static void addShort(byte[] b, int at, int delta) {
        int v = (((b[at] & 0xFF) << 8) | (b[at + 1] & 0xFF)) + delta;
        b[at] = (byte) (v >>> 8);
        b[at + 1] = (byte) v;
    }

    /** Addressing of frames that arrive at the gateway: the sender's view of each form. */
    static OuterAddressing ingressAddressing(NetworkForm form, int networkId, int srcPort) {
        OuterAddressing a = new OuterAddressing().srcMac(PEER_MAC).dstMac(PORT_MAC);
        return switch (form) {
            case IPV4 -> a.srcIp(new byte[] {(byte) 192, (byte) 168, 1, 10}).dstIp(new byte[] {(byte) 192, (byte) 168, 2, 20})
                    .srcPort(srcPort).dstPort(XafHeader.UDP_PORT);
            case IPV6 -> a.srcIp(ip6(1)).dstIp(ip6(2)).srcPort(srcPort).dstPort(XafHeader.UDP_PORT);
            case ID -> a.srcId(0x99).dstId(networkId);
        };
    }

    static byte[] ip6(int last) {
        byte[] a = new byte[16];
        a[0] = (byte) 0xfd;
        a[15] = (byte) last;
        return a;
    }

    private static List<Golden> buildGolden(Random random) {
        List<Golden> list = new ArrayList<>();
        FrameWriter writer = new FrameWriter();
        PayloadIntegrity integrity = new PayloadIntegrity();
        List<Integer> nets = new ArrayList<>();
        for (NetworkForm out : NetworkForm.values()) nets.add(networkIdFor(out));
        nets.add(NET_FENCED);
        nets.add(NET_HAIRPIN);
        for (NetworkForm in : NetworkForm.values()) {
            for (int net : nets) {
                for (int payload : PAYLOAD_LENGTHS) {
                    int outer = in.outerHeaderLength();
                    byte[] bytes = new byte[outer + XafHeader.LENGTH + payload];
                    MemorySegment seg = MemorySegment.ofArray(bytes);
                    for (int i = outer + XafHeader.LENGTH; i < bytes.length; i++) bytes[i] = (byte) random.nextInt(256);
                    // a sender's flows: source ports 9450 and up, sometimes any; ranks small, sometimes any (the
                    // routes' source-port spans pick the egress port from both)
                    int srcPort = random.nextInt(4) == 0 ? random.nextInt(0x10000) : XafHeader.UDP_PORT + random.nextInt(8);
                    int srcRank = random.nextInt(4) == 0 ? random.nextInt(0x10000) : random.nextInt(8);
                    XafHeader h = new XafHeader().wrap(seg, outer).init().type(1 + random.nextInt(3)).networkId(net)
                            .jobId(JOB).jobToken(TOKEN).srcRank(srcRank).dstRank(random.nextInt(8))
                            .step(random.nextInt(1000)).bucketId(random.nextInt(4)).chunkIndex(random.nextInt(64))
                            .chunkCount(64).payloadLength(payload).hopLimit(2 + random.nextInt(20));
                    integrity.seal(h);
                    writer.encapsulate(seg, in, ingressAddressing(in, net, srcPort));
                    list.add(new Golden(in, net, bytes));
                }
            }
        }
        return List.copyOf(list);
    }
}
