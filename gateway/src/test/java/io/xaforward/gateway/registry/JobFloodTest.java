package io.xaforward.gateway.registry;

import io.xaforward.common.EtcdClient;
import io.xaforward.common.EtcdSecurity;
import io.xaforward.common.LocalEtcd;
import io.xaforward.gateway.GatewayConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.*;

/**
 * One job writes more keys under its own directory than one etcd answer may hold ({@link EtcdClient.Limits#DEFAULT}:
 * 65,536 keys) while two other jobs register: a gateway that follows the jobs and was running before the flood, and
 * one started after it, both give the other jobs their routes, skip the flooding job alone, name it in the log and
 * count it; once the job deletes its junk it is read again. Against a real etcd on loopback with its default limits:
 * the junk goes in transactions of 128 puts (etcd's default --max-txn-ops), each about 12 kB (far below its default
 * 1.5 MiB --max-request-bytes), and 65,537 short keys take a few MB of its default 2 GiB backend quota.
 */
class JobFloodTest {
    static final String JOBS = JobRoutes.JOBS;
    static final int JUNK = EtcdClient.Limits.DEFAULT.maxRangeKeys() + 1;
    static LocalEtcd etcd;

    @BeforeAll
    static void start() throws Exception {
        etcd = LocalEtcd.start();
    }

    @AfterAll
    static void stop() throws Exception {
        if (etcd != null) {
            etcd.close();
            assertFalse(etcd.isAlive(), "etcd left running");
        }
    }

    static RouteRegistryWatchTest.Gateway gateway() {
        RouteRegistryWatchTest.Gateway g = new RouteRegistryWatchTest.Gateway();
        g.config = new GatewayConfig(GatewayConfig.AttachMode.NATIVE, Optional.empty(), false, JobRoutesTest.PORTS, List.of());
        return g;
    }

    static RouteRegistryWatch follow(RouteRegistryWatchTest.Gateway gateway) {
        return new RouteRegistryWatch(gateway, new EtcdClient(etcd.clientUrl(), Duration.ofSeconds(10)), JOBS,
                new JobRoutes(JobRoutesTest.ADDRESSES)).start();
    }

    static List<Integer> jobs(RouteRegistryWatchTest.Gateway gateway) {
        return gateway.ids().stream().map(id -> id >>> 16).distinct().sorted().toList();
    }

    static void register(EtcdClient writer, int job) {
        for (int rank = 0; rank < 2; rank++) writer.put(JOBS + job + "/ranks/" + rank, JobRouteQuotaTest.registration(rank, 2), 0);
    }

    @Test
    void aJobFloodingItsDirectoryIsSkippedAloneOnARunningAndOnAFreshGateway() throws Exception {
        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        RouteRegistryWatch running = null, fresh = null;
        try (EtcdClient writer = new EtcdClient(etcd.clientUrl(), Duration.ofSeconds(10))) {
            System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
            register(writer, 7);
            // the flooding job has one real registration too: it comes back with it once the junk is gone
            writer.put(JOBS + "666/ranks/0", JobRouteQuotaTest.registration(0, 1), 0);
            RouteRegistryWatchTest.Gateway before = gateway();
            running = follow(before);
            assertEquals(List.of(7, 666), jobs(before));

            Map<String, String> junk = new LinkedHashMap<>();
            for (int i = 0; i < JUNK; i++) junk.put(JOBS + "666/junk/" + i, "x");
            long t0 = System.nanoTime();
            Thread flood = Thread.ofPlatform().start(() -> etcd.putAll(EtcdSecurity.NONE, junk));
            register(writer, 8); // while the flood goes on
            flood.join(90_000);
            assertFalse(flood.isAlive(), "the junk was not written within 90 s");
            long floodMs = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(JUNK + 1, writer.count(JOBS + "666/", 0), "every junk key is in etcd");

            RouteRegistryWatchTest.Gateway b = before;
            RouteRegistryWatchTest.await(() -> jobs(b).equals(List.of(7, 8)),
                    () -> "the running gateway: job 8 routed, job 666 withdrawn: " + jobs(b));
            assertEquals(1, before.metric("xaf_registry_groups_skipped"));
            assertEquals(1, before.metric("xaf_registry_groups_skipped_total"));
            assertEquals(1, before.metric("xaf_registry_up"));

            RouteRegistryWatchTest.Gateway after = gateway();
            fresh = follow(after); // a full read of a registry that one answer could not hold
            assertEquals(List.of(7, 8), jobs(after), "the fresh gateway starts with the other jobs' routes");
            assertEquals(1, after.metric("xaf_registry_groups_skipped"));
            assertEquals(0, after.metric("xaf_registry_errors_total"));

            running.resyncNow(); // SIGHUP on the running one: a full read too
            assertEquals(List.of(7, 8), jobs(before));
            assertEquals(1, before.metric("xaf_registry_groups_skipped_total"), "a job still skipped is not counted again");

            register(writer, 9); // a job that starts after the flood
            RouteRegistryWatchTest.await(() -> jobs(b).equals(List.of(7, 8, 9)) && jobs(after).equals(List.of(7, 8, 9)),
                    () -> "job 9 routed by both: " + jobs(b) + " " + jobs(after));

            etcd.deletePrefix(EtcdSecurity.NONE, JOBS + "666/junk/");
            RouteRegistryWatchTest.await(() -> jobs(b).equals(List.of(7, 8, 9, 666)) && jobs(after).equals(List.of(7, 8, 9, 666)),
                    () -> "job 666 back within the limits, read again by both: " + jobs(b) + " " + jobs(after));
            assertEquals(0, before.metric("xaf_registry_groups_skipped"));
            assertEquals(0, after.metric("xaf_registry_groups_skipped"));
            err.println("JobFloodTest: " + JUNK + " junk keys written in " + floodMs + " ms");
        } finally {
            System.setErr(err);
            if (running != null) running.close();
            if (fresh != null) fresh.close();
        }
        String log = captured.toString(StandardCharsets.UTF_8);
        assertTrue(log.contains("group " + JOBS + "666/ skipped"), "the flooding job is named in the log:\n" + tail(log));
        assertTrue(log.contains("group " + JOBS + "666/ is within the limits again"), "and its return:\n" + tail(log));
        assertFalse(log.contains("group " + JOBS + "7/") || log.contains("group " + JOBS + "8/"), tail(log));
    }

    private static String tail(String log) {
        return log.length() <= 4000 ? log : log.substring(log.length() - 4000);
    }
}
