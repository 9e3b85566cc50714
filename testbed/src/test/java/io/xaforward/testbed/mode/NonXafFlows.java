package io.xaforward.testbed.mode;

import io.xaforward.dataplane.sys.NetworkNamespace;
import io.xaforward.testbed.Node;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Ordinary (non-XAF) traffic between two hosts, for checking what a gateway mode does with it. */
final class NonXafFlows {
    private NonXafFlows() {}

    /** Sends {@code bytes} over a TCP connection from {@code from} to {@code to}:{@code port}; returns the bytes the server read. */
    static long tcpTransfer(Node from, Node to, int port, int bytes) throws Exception {
        ServerSocketChannel server = NetworkNamespace.call(to.namespace(), () -> {
            ServerSocketChannel s = ServerSocketChannel.open();
            s.bind(new InetSocketAddress(to.ip(), port));
            return s;
        });
        try (server) {
            CompletableFuture<Long> read = CompletableFuture.supplyAsync(() -> {
                try (SocketChannel c = server.accept()) {
                    ByteBuffer b = ByteBuffer.allocate(65536);
                    long total = 0;
                    for (int n; (n = c.read(b.clear())) >= 0; ) total += n;
                    return total;
                } catch (IOException e) {
                    return -1L;
                }
            });
            SocketChannel client = NetworkNamespace.call(from.namespace(), () -> SocketChannel.open());
            try (client) {
                client.socket().connect(new InetSocketAddress(to.ip(), port), 3000);
                ByteBuffer data = ByteBuffer.allocate(bytes);
                while (data.hasRemaining()) client.write(data);
            } catch (IOException e) {
                server.close();
                return -1;
            }
            try {
                return read.get(10, TimeUnit.SECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                return -2;
            }
        }
    }

    /** True when a UDP datagram from {@code from} reaches {@code to}:{@code port} within 700 ms (three tries). */
    static boolean udpArrives(Node from, Node to, int port) throws Exception {
        StandardProtocolFamily fam = to.ipv4().isPresent() ? StandardProtocolFamily.INET : StandardProtocolFamily.INET6;
        try (DatagramChannel rx = NetworkNamespace.call(to.namespace(), () -> DatagramChannel.open(fam).bind(new InetSocketAddress(to.ip(), port)));
             DatagramChannel tx = NetworkNamespace.call(from.namespace(), () -> DatagramChannel.open(fam))) {
            rx.configureBlocking(false);
            for (int attempt = 0; attempt < 3; attempt++) {
                tx.send(ByteBuffer.wrap(new byte[] {1, 2, 3}), new InetSocketAddress(to.ip(), port));
                long end = System.nanoTime() + 250_000_000L;
                while (System.nanoTime() < end) {
                    if (rx.receive(ByteBuffer.allocate(64)) != null) return true;
                    Thread.sleep(5);
                }
            }
            return false;
        }
    }
}
