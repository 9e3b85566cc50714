package io.xaforward.transport;

import java.util.function.UnaryOperator;

/** Two started transports (ranks 0 and 1) on one in-memory network; closes both. */
final class TransportPair implements AutoCloseable {
    static final int JOB = 42;
    static final int TOKEN = 0x5EC12E7;

    final LoopbackNetwork network;
    final ReliableTransport rank0;
    final ReliableTransport rank1;
    /** Rank 0's endpoint: a test that sends through it directly plays an attacker who spoofs rank 0's address. */
    final LoopbackNetwork.Endpoint endpoint0;

    TransportPair(LoopbackNetwork.Impairments impairments, long seed,
                  UnaryOperator<TransportConfig.Builder> tweak) {
        network = new LoopbackNetwork(impairments, seed);
        LoopbackNetwork.Endpoint e0 = endpoint0 = network.newEndpoint();
        LoopbackNetwork.Endpoint e1 = network.newEndpoint();
        AddressBook book = AddressBook.builder()
                .add(0, 0x0A000000, e0.localPeer())
                .add(1, 0x0A000001, e1.localPeer())
                .build();
        rank0 = new ReliableTransport(tweak.apply(TransportConfig.builder(0, JOB, TOKEN)).build(), book, e0).start();
        rank1 = new ReliableTransport(tweak.apply(TransportConfig.builder(1, JOB, TOKEN)).build(), book, e1).start();
    }

    static MessageId id(int step, int bucket) {
        return new MessageId(JOB, step, bucket);
    }

    @Override
    public void close() {
        rank0.close();
        rank1.close();
    }
}
