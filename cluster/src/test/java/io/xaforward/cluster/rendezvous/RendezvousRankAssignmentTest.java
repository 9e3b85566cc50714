package io.xaforward.cluster.rendezvous;

import io.xaforward.common.EtcdClient;
import io.xaforward.common.LocalEtcd;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Workers started without a rank get one from the etcd rendezvous: distinct ranks 0..world-1 however many start at
 * once, a worker beyond the world fails with the reason, and a restarted worker gets back the rank it ran before.
 * Runs a real etcd (Debian package etcd-server).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RendezvousRankAssignmentTest {
    static LocalEtcd etcd;

    @BeforeAll
    static void start() throws Exception {
        etcd = LocalEtcd.start();
    }

    @AfterAll
    static void stop() throws Exception {
        if (etcd != null) etcd.close();
    }

    static final ByteArrayOutputStream LOG = new ByteArrayOutputStream();

    static EtcdRendezvous rendezvous(Duration timeout) {
        return new EtcdRendezvous(etcd.clientUrl(), new EtcdRendezvous.Site("a", "10.0.1.254", 0), timeout,
                new PrintStream(LOG, true));
    }

    static String registration(int host) {
        return "{datacenter: \"a\", form: ipv4, mtu: 1500, interface: \"eth1\", ip: \"10.0.1." + host
                + "\", gateway: {ip: \"10.0.1.254\"}}";
    }

    @Test
    void workersStartedAtOnceGetDistinctRanksAndOneTooManyIsTold() throws Exception {
        int job = 21, world = 4;
        List<EtcdRendezvous> held = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(world);
        try {
            List<Future<Integer>> claims = new ArrayList<>();
            for (int w = 0; w < world; w++) {
                EtcdRendezvous r = rendezvous(Duration.ofSeconds(20));
                held.add(r);
                int host = w + 1;
                claims.add(pool.submit((Callable<Integer>) () -> r.claimRank(job, world, registration(host), Set.of(),
                        Duration.ZERO)));
            }
            Set<Integer> ranks = new TreeSet<>();
            for (Future<Integer> f : claims) ranks.add(f.get(30, TimeUnit.SECONDS));
            assertEquals(Set.of(0, 1, 2, 3), ranks, "every rank once");
            try (EtcdClient client = new EtcdClient(etcd.clientUrl(), Duration.ofSeconds(5))) {
                assertEquals(world, client.range(EtcdRendezvous.jobPrefix(job)).kvs().size());
            }

            try (EtcdRendezvous fifth = rendezvous(Duration.ofSeconds(1))) {
                var e = assertThrows(IllegalStateException.class, () -> fifth.claimRank(job, world, registration(9), Set.of(),
                        Duration.ZERO));
                assertTrue(e.getMessage().contains("all 4 ranks are held by other workers"), e.getMessage());
            }

            // Rank 2's worker ends (its lease is revoked): a new worker that ran rank 1 here before cannot have
            // rank 1 (held), waits for it no longer than told, then takes the free rank 2.
            closeWorkerOf(held, 2);
            try (EtcdRendezvous next = rendezvous(Duration.ofSeconds(10))) {
                long start = System.nanoTime();
                assertEquals(2, next.claimRank(job, world, registration(7), List.of(1), Duration.ofMillis(600)));
                assertTrue(System.nanoTime() - start >= 500_000_000L, "waited for its own rank first");
            }
        } finally {
            pool.shutdownNow();
            for (EtcdRendezvous r : held) r.close();
        }
    }

    @Test
    void aRestartedWorkerGetsItsRankBack() throws Exception {
        int job = 22, world = 3;
        try (EtcdRendezvous a = rendezvous(Duration.ofSeconds(10)); EtcdRendezvous b = rendezvous(Duration.ofSeconds(10))) {
            assertEquals(2, a.claimRank(job, world, registration(1), List.of(2), Duration.ofSeconds(5)),
                    "the rank whose checkpoints this host holds, though 0 is free");
            assertEquals(0, b.claimRank(job, world, registration(2), List.of(), Duration.ZERO), "the lowest free rank");
        }
    }

    /** Closes (revokes the lease of) the rendezvous that was assigned {@code rank}. */
    private static void closeWorkerOf(List<EtcdRendezvous> held, int rank) throws Exception {
        try (EtcdClient client = new EtcdClient(etcd.clientUrl(), Duration.ofSeconds(5))) {
            for (EtcdRendezvous r : held) {
                if (r.claimedRank() == rank) {
                    r.close();
                    assertTrue(client.range(EtcdRendezvous.jobPrefix(21) + rank).kvs().isEmpty(), "its key is gone at once");
                    return;
                }
            }
        }
        fail("no worker holds rank " + rank);
    }
}
