package io.xaforward.testbed;

import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Reachability probe for the root tests (the machine has no ping): {@code serve PORT} echoes datagrams until
 * killed; {@code probe PORT ADDR...} sends to each address and exits 0 only if every one echoed back.
 * Runs inside namespaces through {@link Netns#javaProcessBuilder}.
 */
public final class UdpEcho {
    public static void main(String[] args) throws IOException {
        int port = Integer.parseInt(args[1]);
        if (args[0].equals("serve")) {
            try (DatagramSocket s = new DatagramSocket(new InetSocketAddress(port))) {
                System.out.println("ready");
                System.out.flush();
                byte[] buf = new byte[2048];
                while (true) {
                    DatagramPacket p = new DatagramPacket(buf, buf.length);
                    s.receive(p);
                    s.send(new DatagramPacket(p.getData(), p.getLength(), p.getSocketAddress()));
                }
            }
        }
        List<String> failed = new ArrayList<>();
        try (DatagramSocket s = new DatagramSocket()) {
            s.setSoTimeout(700);
            for (int i = 2; i < args.length; i++) if (!echoed(s, args[i], port)) failed.add(args[i]);
        }
        if (!failed.isEmpty()) {
            System.err.println("no echo from " + failed);
            System.exit(1);
        }
        System.out.println("all echoed");
    }

    private static boolean echoed(DatagramSocket s, String addr, int port) throws IOException {
        byte[] msg = ("probe " + addr).getBytes(StandardCharsets.UTF_8);
        InetSocketAddress to = new InetSocketAddress(InetAddress.getByName(addr), port);
        for (int attempt = 0; attempt < 4; attempt++) {
            s.send(new DatagramPacket(msg, msg.length, to));
            byte[] buf = new byte[2048];
            DatagramPacket p = new DatagramPacket(buf, buf.length);
            try {
                while (true) {
                    s.receive(p);
                    if (new String(p.getData(), 0, p.getLength(), StandardCharsets.UTF_8).equals("probe " + addr)) return true;
                }
            } catch (SocketTimeoutException e) {
                // retry: the server may still be starting
            }
        }
        return false;
    }
}
