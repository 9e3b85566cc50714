package io.xaforward.bench.allreduce;

import io.xaforward.collective.Algorithm;
import io.xaforward.collective.CollectiveConfig;
import io.xaforward.collective.CollectiveGroup;
import io.xaforward.collective.Collectives;
import io.xaforward.transport.AddressBook;
import io.xaforward.transport.LoopbackNetwork;
import io.xaforward.transport.ReliableTransport;
import io.xaforward.transport.TransportConfig;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The bench runs every size on all ranks, checks the result and reports nccl-tests' algbw and busbw. */
class AllReduceBenchTest {

    @Test
    void reportsBandwidthAsNcclTestsDefinesIt() throws Exception {
        CollectiveConfig config = new CollectiveConfig(64 << 10, Algorithm.HIERARCHICAL, Duration.ofSeconds(20));
        int[] dcOfRank = {0, 0, 1, 1};
        int n = dcOfRank.length;
        LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 12);
        List<LoopbackNetwork.Endpoint> endpoints = new ArrayList<>();
        AddressBook.Builder book = AddressBook.builder();
        for (int r = 0; r < n; r++) {
            LoopbackNetwork.Endpoint e = network.newEndpoint();
            endpoints.add(e);
            book.add(r, 0x0A000100 + r, e.localPeer());
        }
        AddressBook addresses = book.build();
        List<ReliableTransport> transports = new ArrayList<>();
        List<Collectives> collectives = new ArrayList<>();
        try {
            for (int r = 0; r < n; r++) {
                ReliableTransport t = new ReliableTransport(TransportConfig.builder(r, 7, 0xC0FFEE).build(),
                        addresses, endpoints.get(r)).start();
                transports.add(t);
                collectives.add(new Collectives(new CollectiveGroup(r, n, dcOfRank), t, config));
            }
            long[] sizes = {4 << 10, 1 << 20};
            for (Algorithm algorithm : Algorithm.values()) {
                // the transports are shared across algorithms and refuse a reused message id: own step range each
                int firstStep = 1000 + 100 * algorithm.ordinal();
                AllReduceBench bench = new AllReduceBench(collectives, algorithm, firstStep);
                List<AllReduceBench.Result> results = bench.run(sizes, 1, 3);
                assertEquals(sizes.length, results.size());
                for (int i = 0; i < sizes.length; i++) {
                    AllReduceBench.Result r = results.get(i);
                    System.out.println(r);
                    assertEquals(sizes[i], r.bytes());
                    assertEquals(4, r.ranks());
                    assertTrue(r.correct(), r::toString);
                    assertTrue(r.seconds() > 0);
                    assertEquals(r.bytes() / r.seconds() / 1e9, r.algBandwidthGBps(), 1e-9 * r.algBandwidthGBps());
                    assertEquals(r.algBandwidthGBps() * 1.5, r.busBandwidthGBps(), 1e-9 * r.busBandwidthGBps());
                }
            }
        } finally {
            for (int r = 0; r < collectives.size(); r++) {
                transports.get(r).close();
                collectives.get(r).close();
            }
            for (int r = collectives.size(); r < transports.size(); r++) {
                transports.get(r).close();
            }
        }
        assertEquals(7.0 / 4, AllReduceBench.busBandwidth(1.0, 8), 1e-12);
    }
}
