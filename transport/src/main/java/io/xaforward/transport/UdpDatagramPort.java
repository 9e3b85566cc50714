package io.xaforward.transport;

import io.xaforward.protocol.XafHeader;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.net.Inet6Address;
import java.net.InetSocketAddress;
import java.net.ProtocolFamily;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.function.Consumer;

/**
 * XAF over UDP (the IPv4 and IPv6 network forms) on a non-blocking {@link DatagramChannel}: the kernel adds the
 * IP and UDP headers. One direct receive buffer and one direct send buffer are allocated up front and reused for
 * every datagram; socket buffers are enlarged so that a window of chunks survives a short scheduling stall.
 */
public final class UdpDatagramPort implements DatagramPort {
    /** UDP payload limit: 65535 minus the 8-byte UDP header and a 20-byte IPv4 header. */
    public static final int MAX_UDP_DATAGRAM = 65_507;
    public static final int DEFAULT_SOCKET_BUFFER_BYTES = 8 << 20;

    private final DatagramChannel channel;
    /** Lets an idle event loop sleep until a datagram arrives ({@link #awaitReceive}). */
    private final Selector selector;
    private static final Consumer<SelectionKey> IGNORE_KEY = key -> { };
    private final ByteBuffer receiveBuffer;
    private final MemorySegment receiveSegment;
    private final ByteBuffer sendBuffer;
    private final MemorySegment sendSegment;
    private final InetPeer localPeer;
    private final int maxDatagramLength;

    /** Binds to {@code bind} (port 0 picks a free port), IPv6 when the address is IPv6. */
    public UdpDatagramPort(InetSocketAddress bind) {
        this(bind, MAX_UDP_DATAGRAM, DEFAULT_SOCKET_BUFFER_BYTES);
    }

    public UdpDatagramPort(InetSocketAddress bind, int maxDatagramLength, int socketBufferBytes) {
        if (maxDatagramLength < XafHeader.LENGTH || maxDatagramLength > MAX_UDP_DATAGRAM) {
            throw new IllegalArgumentException("maxDatagramLength " + maxDatagramLength + " is outside ["
                    + XafHeader.LENGTH + ", " + MAX_UDP_DATAGRAM + "]");
        }
        this.maxDatagramLength = maxDatagramLength;
        ProtocolFamily family = bind.getAddress() instanceof Inet6Address
                ? StandardProtocolFamily.INET6 : StandardProtocolFamily.INET;
        try {
            channel = DatagramChannel.open(family);
            channel.setOption(StandardSocketOptions.SO_RCVBUF, socketBufferBytes);
            channel.setOption(StandardSocketOptions.SO_SNDBUF, socketBufferBytes);
            channel.configureBlocking(false);
            channel.bind(bind);
            localPeer = new InetPeer((InetSocketAddress) channel.getLocalAddress());
            selector = Selector.open();
            channel.register(selector, SelectionKey.OP_READ);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open a UDP port on " + bind, e);
        }
        receiveBuffer = ByteBuffer.allocateDirect(maxDatagramLength);
        receiveSegment = MemorySegment.ofBuffer(receiveBuffer);
        sendBuffer = ByteBuffer.allocateDirect(maxDatagramLength);
        sendSegment = MemorySegment.ofBuffer(sendBuffer);
    }

    @Override
    public int maxDatagramLength() {
        return maxDatagramLength;
    }

    @Override
    public boolean send(MemorySegment buffer, long offset, int length, Peer destination) {
        if (!(destination instanceof InetPeer(InetSocketAddress address))) {
            throw new IllegalArgumentException("UDP port cannot send to " + destination);
        }
        if (length > maxDatagramLength) {
            throw new IllegalArgumentException("datagram of " + length + " bytes exceeds the port limit of "
                    + maxDatagramLength + " bytes");
        }
        MemorySegment.copy(buffer, offset, sendSegment, 0, length);
        sendBuffer.clear().limit(length);
        try {
            return channel.send(sendBuffer, address) == length;
        } catch (IOException e) {
            // ICMP errors (port unreachable) surface here on some kernels: treat as a lost datagram.
            return false;
        }
    }

    private InetSocketAddress claimedAddress;
    private int claimedLength;

    /** Claims the direct send buffer: the transport writes the datagram there, and the kernel copies it once. */
    @Override
    public long claim(int length, Peer destination) {
        if (!(destination instanceof InetPeer(InetSocketAddress address))) {
            throw new IllegalArgumentException("UDP port cannot send to " + destination);
        }
        if (length > maxDatagramLength) {
            throw new IllegalArgumentException("datagram of " + length + " bytes exceeds the port limit of "
                    + maxDatagramLength + " bytes");
        }
        claimedAddress = address;
        claimedLength = length;
        return 0;
    }

    @Override
    public boolean supportsClaim() {
        return true;
    }

    @Override
    public MemorySegment claimSegment() {
        return sendSegment;
    }

    @Override
    public boolean commitClaim() {
        if (claimedAddress == null) throw new IllegalStateException("commitClaim without a claim");
        InetSocketAddress address = claimedAddress;
        claimedAddress = null;
        sendBuffer.clear().limit(claimedLength);
        try {
            return channel.send(sendBuffer, address) == claimedLength;
        } catch (IOException e) {
            return false; // as in send: an ICMP error is a lost datagram
        }
    }

    @Override
    public int poll(DatagramHandler handler, int limit) {
        int delivered = 0;
        for (int attempts = 0; delivered < limit && attempts < 2 * limit; attempts++) {
            receiveBuffer.clear();
            SocketAddress from;
            try {
                from = channel.receive(receiveBuffer);
            } catch (IOException e) {
                continue; // a queued ICMP error; the next receive returns data or null
            }
            if (from == null) {
                break;
            }
            receivedFrom = from;
            try {
                handler.onDatagram(receiveSegment, 0, receiveBuffer.position());
            } finally {
                receivedFrom = null;
            }
            delivered++;
        }
        return delivered;
    }

    /** The sender of the datagram being delivered (the JDK reuses one object per sender while it stays the same). */
    private SocketAddress receivedFrom;
    private SocketAddress lastSender;
    private Peer lastPeer;
    private boolean lastMatch;

    @Override
    public boolean receivedFrom(Peer peer) {
        SocketAddress from = receivedFrom;
        if (from == null) throw new IllegalStateException("receivedFrom outside a DatagramHandler call");
        if (from == lastSender && peer == lastPeer) return lastMatch;
        boolean match = peer instanceof InetPeer(InetSocketAddress expected) && from instanceof InetSocketAddress actual
                && expected.getPort() == actual.getPort() && sameHost(expected.getAddress(), actual.getAddress());
        lastSender = from;
        lastPeer = peer;
        lastMatch = match;
        return match;
    }

    /** Equal addresses, or an IPv4 address and its IPv4-mapped IPv6 form (a dual-stack socket's view of IPv4). */
    private static boolean sameHost(java.net.InetAddress a, java.net.InetAddress b) {
        if (a.equals(b)) return true;
        byte[] x = a.getAddress(), y = b.getAddress();
        if (x.length == y.length) return false;
        byte[] v6 = x.length == 16 ? x : y, v4 = x.length == 4 ? x : y;
        for (int i = 0; i < 10; i++) if (v6[i] != 0) return false;
        if (v6[10] != (byte) 0xFF || v6[11] != (byte) 0xFF) return false;
        return java.util.Arrays.equals(v6, 12, 16, v4, 0, 4);
    }

    @Override
    public boolean canAwaitReceive() {
        return true;
    }

    /** epoll through the selector; the action form of select keeps no selected-key set, so nothing is allocated. */
    @Override
    public void awaitReceive(long timeoutNanos) {
        try {
            selector.select(IGNORE_KEY, DatagramPort.awaitMillis(timeoutNanos));
        } catch (IOException | java.nio.channels.ClosedSelectorException e) {
            // Closed under us or interrupted: return, and the event loop sees why on its next pass.
        }
    }

    @Override
    public void wakeup() {
        selector.wakeup();
    }

    @Override
    public InetPeer localPeer() {
        return localPeer;
    }

    @Override
    public void close() {
        try {
            selector.close();
            channel.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
