package io.xaforward.gateway.registry;

import io.xaforward.common.EtcdClient;

import io.xaforward.gateway.GatewayConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Per-job route quotas of a gateway that follows the jobs: one job that floods the registry with registrations gets
 * routes for its quota of ranks only (its registered world size, never more than --max-ranks-per-job), and every
 * other job still gets its routes. The gateway stand-in refuses a route set larger than its route map, whole, as
 * {@code GatewayService} does; without quotas the flood makes every update too large and no job gets a route.
 */
class JobRouteQuotaTest {
    /** The stand-in's route map: smaller than the real one (65,536), so that a flood of test size overflows it. */
    static final int MAP_CAPACITY = 4096;
    static final String JOBS = JobRoutes.JOBS;

    FakeEtcd etcd;
    CappedGateway gateway;
    RouteRegistryWatch watch;

    /** Applies a route set only when it fits the map, as the XDP gateway's reconciler does; counts refusals. */
    static final class CappedGateway extends RouteRegistryWatchTest.Gateway {
        int refused;

        CappedGateway() {
            config = new GatewayConfig(GatewayConfig.AttachMode.NATIVE, Optional.empty(), false, JobRoutesTest.PORTS, List.of());
        }

        @Override
        public void applyRoutes(List<GatewayConfig.RouteConfig> routes) {
            if (routes.size() > MAP_CAPACITY) {
                refused++;
                throw new IllegalArgumentException(routes.size() + " routes, more than the " + MAP_CAPACITY + " the route map holds");
            }
            super.applyRoutes(routes);
        }
    }

    /** A registration of rank {@code rank} in data center a (the gateway's port gw-a), with a world size or none. */
    static String registration(int rank, Integer world) {
        return "{datacenter: \"a\", form: ipv4, mtu: 1500, interface: \"eth1\", token: 0x5eed0007, mac: \""
                + String.format("02:00:00:00:%02x:%02x", rank >> 8, rank & 0xFF) + "\", ip: \"10.0." + (rank >> 8) + "."
                + (rank & 0xFF) + "\"" + (world == null ? "" : ", world: " + world) + ", gateway: {ip: \"10.0.1.254\"}}";
    }

    @BeforeEach
    void up() throws Exception {
        etcd = new FakeEtcd();
        gateway = new CappedGateway();
    }

    @AfterEach
    void down() {
        if (watch != null) watch.close();
        etcd.close();
    }

    void startWatch(int maxRanksPerJob) {
        watch = new RouteRegistryWatch(gateway, new EtcdClient(etcd.url(), Duration.ofSeconds(5)), JOBS,
                new JobRoutes(JobRoutesTest.ADDRESSES, maxRanksPerJob, MAP_CAPACITY)).start();
    }

    /** Job 7, two ranks, well behaved; job 9 writes {@code flood} registrations, each claiming {@code world}. */
    void registerJobs(int flood, Integer world) {
        etcd.put(JOBS + "7/ranks/0", registration(0, 2));
        etcd.put(JOBS + "7/ranks/1", registration(1, 2));
        for (int r = 0; r < flood; r++) etcd.put(JOBS + "9/ranks/" + r, registration(r, world));
    }

    List<Integer> routesOfJob(int job) {
        return gateway.ids().stream().filter(id -> id >>> 16 == job).toList();
    }

    @Test
    void aJobFloodingBeyondItsWorldGetsItsWorldAndTheOtherJobsKeepTheirRoutes() {
        registerJobs(MAP_CAPACITY + 904, 4); // 5000 registrations, each saying the world is 4
        startWatch(JobRoutes.DEFAULT_MAX_RANKS_PER_JOB);
        assertEquals(0, gateway.refused, "no update refused");
        assertEquals(List.of(0x00070000, 0x00070001), routesOfJob(7), "the other job's routes are installed");
        assertEquals(List.of(0x00090000, 0x00090001, 0x00090002, 0x00090003), routesOfJob(9), "the flooding job: its world");
        assertEquals(4996, gateway.metric("xaf_registry_quota_dropped"));
        assertEquals(4996, gateway.metric("xaf_registry_quota_dropped_total"));
        assertEquals(1, gateway.metric("xaf_registry_jobs_over_quota"));
        assertEquals(0, gateway.metric("xaf_registry_rejected_total"), "over-quota registrations are not errors");

        watch.resyncNow(); // the same registrations again are not counted again
        assertEquals(4996, gateway.metric("xaf_registry_quota_dropped_total"));

        for (int r = 4; r < MAP_CAPACITY + 904; r++) etcd.delete(JOBS + "9/ranks/" + r);
        watch.resyncNow();
        assertEquals(0, gateway.metric("xaf_registry_quota_dropped"));
        assertEquals(0, gateway.metric("xaf_registry_jobs_over_quota"));
        assertEquals(6, gateway.ids().size());
    }

    @Test
    void withoutARegisteredWorldTheGatewaysCapBoundsTheJob() {
        registerJobs(MAP_CAPACITY + 904, null);
        startWatch(1024);
        assertEquals(0, gateway.refused);
        assertEquals(List.of(0x00070000, 0x00070001), routesOfJob(7));
        assertEquals(1024, routesOfJob(9).size(), "ranks 0..1023 of the job that registered no world size");
        assertEquals(0x00090000 + 1023, (int) routesOfJob(9).getLast());
        assertEquals(5000 - 1024, gateway.metric("xaf_registry_quota_dropped"));
    }

    @Test
    void theSmallestRegisteredWorldOfAJobIsItsQuota() {
        etcd.put(JOBS + "9/ranks/0", registration(0, 8));
        etcd.put(JOBS + "9/ranks/1", registration(1, 3));
        for (int r = 2; r < 6; r++) etcd.put(JOBS + "9/ranks/" + r, registration(r, 8));
        startWatch(JobRoutes.DEFAULT_MAX_RANKS_PER_JOB);
        assertEquals(List.of(0x00090000, 0x00090001, 0x00090002), routesOfJob(9));
        assertEquals(3, gateway.metric("xaf_registry_quota_dropped"));
    }

    @Test
    void manyJobsWithinTheirQuotasFillTheMapWithoutTakingItFromTheJobsThatHadRoutes() {
        // job 20 (the last by id) runs first; then jobs 10..14 each register 1024 ranks: 2 + 5 x 1024 > 4096
        etcd.put(JOBS + "20/ranks/0", registration(0, 2));
        etcd.put(JOBS + "20/ranks/1", registration(1, 2));
        startWatch(1024);
        assertEquals(List.of(0x00140000, 0x00140001), routesOfJob(20));
        for (int job = 10; job < 15; job++) {
            for (int r = 0; r < 1024; r++) etcd.put(JOBS + job + "/ranks/" + r, registration(r, 1024));
        }
        watch.resyncNow();
        assertEquals(0, gateway.refused, "no update refused whole");
        assertEquals(List.of(0x00140000, 0x00140001), routesOfJob(20), "the job that had routes keeps them");
        for (int job = 10; job < 13; job++) assertEquals(1024, routesOfJob(job).size(), "job " + job + " fits");
        for (int job = 13; job < 15; job++) assertEquals(List.of(), routesOfJob(job), "job " + job + " does not fit: no route at all");
        assertEquals(2, gateway.metric("xaf_registry_jobs_refused"));
        assertEquals(2 + 3 * 1024, gateway.ids().size());

        for (int r = 0; r < 1024; r++) etcd.delete(JOBS + "10/ranks/" + r); // job 10 ends: room for job 13
        watch.resyncNow();
        assertEquals(1024, routesOfJob(13).size());
        assertEquals(List.of(), routesOfJob(14));
        assertEquals(1, gateway.metric("xaf_registry_jobs_refused"));
    }

    @Test
    void aMaxRanksPerJobOutsideTheRankRangeIsRefused() {
        for (int bad : new int[] {0, 0x10001}) {
            var e = assertThrows(IllegalArgumentException.class, () -> new JobRoutes(JobRoutesTest.ADDRESSES, bad));
            assertTrue(e.getMessage().contains("--max-ranks-per-job must be 1..65536"), e.getMessage());
        }
    }
}
