package io.xaforward.cluster.agent;

import java.io.IOException;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/** A raw protocol client for tests: writes any bytes, reads reply frames. */
final class AgentTestClient implements AutoCloseable {
    record Reply(int type, int id, int status, String message, ByteBuffer body) {
        boolean ok() { return status == AgentProtocol.OK; }
    }

    final SocketChannel channel;

    AgentTestClient(Path socket) throws IOException {
        channel = SocketChannel.open(UnixDomainSocketAddress.of(socket));
    }

    void write(byte[] bytes) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        while (b.hasRemaining()) channel.write(b);
    }

    /** A frame: length, then type, id and body. */
    static byte[] frame(int type, int id, byte[] body) {
        return ByteBuffer.allocate(4 + 5 + body.length).order(ByteOrder.LITTLE_ENDIAN)
                .putInt(5 + body.length).put((byte) type).putInt(id).put(body).array();
    }

    static byte[] hello(int id, int version) {
        return frame(AgentProtocol.HELLO, id, ByteBuffer.allocate(6).order(ByteOrder.LITTLE_ENDIAN)
                .putShort((short) version).putInt((int) ProcessHandle.current().pid()).array());
    }

    static byte[] allreduce(int id, long offset, int count, int op, String name) {
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        return frame(AgentProtocol.ALLREDUCE, id, ByteBuffer.allocate(15 + n.length).order(ByteOrder.LITTLE_ENDIAN)
                .putLong(offset).putInt(count).put((byte) op).putShort((short) n.length).put(n).array());
    }

    static byte[] broadcast(int id, long offset, int count, int root, String name) {
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        return frame(AgentProtocol.BROADCAST, id, ByteBuffer.allocate(18 + n.length).order(ByteOrder.LITTLE_ENDIAN)
                .putLong(offset).putInt(count).putInt(root).putShort((short) n.length).put(n).array());
    }

    Reply send(byte[] frame) throws IOException {
        write(frame);
        return read();
    }

    /** The next reply; null when the agent closed the connection. */
    Reply read() throws IOException {
        ByteBuffer length = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
        if (!fill(length)) return null;
        int n = length.flip().getInt();
        if (n < 6 || n > AgentProtocol.MAX_FRAME) throw new IOException("reply frame of " + n + " bytes");
        ByteBuffer body = ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
        if (!fill(body)) throw new IOException("reply cut short");
        body.flip();
        int type = Byte.toUnsignedInt(body.get());
        int id = body.getInt();
        int status = body.get();
        String message = null;
        if (status == AgentProtocol.ERROR) {
            byte[] text = new byte[Short.toUnsignedInt(body.getShort())];
            body.get(text);
            message = new String(text, StandardCharsets.UTF_8);
        }
        return new Reply(type, id, status, message, body);
    }

    private boolean fill(ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (channel.read(b) < 0) return false;
        }
        return true;
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
