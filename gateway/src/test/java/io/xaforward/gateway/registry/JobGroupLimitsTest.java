package io.xaforward.gateway.registry;

import io.xaforward.common.EtcdClient;
import io.xaforward.common.EtcdSecurity;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/**
 * A gateway that follows the jobs reads them job by job, within a client's answer limits (small ones here: 100 keys,
 * 64 KiB), against the scripted etcd: a job over the limits is skipped alone at a full read and on the watch (by
 * its size as the watch tracks it), directories that hold no registrations are never read, and a skipped job is
 * read back in once it fits. {@link JobFloodTest} does the same at the default limits against a real etcd.
 */
class JobGroupLimitsTest {
    static final String JOBS = JobRoutes.JOBS;
    static final EtcdClient.Limits SMALL = new EtcdClient.Limits(64 << 10, 100);
    FakeEtcd etcd;
    RouteRegistryWatchTest.Gateway gateway;
    RouteRegistryWatch watch;

    @BeforeEach
    void up() throws Exception {
        etcd = new FakeEtcd();
        gateway = JobFloodTest.gateway();
    }

    @AfterEach
    void down() {
        if (watch != null) watch.close();
        etcd.close();
    }

    void startWatch() {
        watch = new RouteRegistryWatch(gateway, new EtcdClient(etcd.url(), Duration.ofSeconds(5), EtcdSecurity.NONE, SMALL),
                JOBS, new JobRoutes(JobRoutesTest.ADDRESSES)).start();
    }

    void register(int job, int ranks, boolean watched) {
        for (int r = 0; r < ranks; r++) put(JOBS + job + "/ranks/" + r, JobRouteQuotaTest.registration(r, ranks), watched);
    }

    /** A put into the store, and (on a running gateway) its watch event. */
    void put(String key, String value, boolean watched) {
        etcd.put(key, value);
        if (watched) etcd.watchLines.add(FakeEtcd.putEvent(key, value, etcd.revision()));
    }

    void delete(String key) {
        etcd.delete(key);
        etcd.watchLines.add(FakeEtcd.deleteEvent(key, etcd.revision()));
    }

    @Test
    void aFullReadSkipsAJobOfTooManyKeysAndNeverReadsDirectoriesWithoutRegistrations() {
        register(7, 2, false);
        register(9, 1, false);
        for (int i = 0; i < SMALL.maxRangeKeys(); i++) etcd.put(JOBS + "9/junk/" + i, "x"); // 101 keys with the registration
        for (int i = 0; i < 500; i++) etcd.put(JOBS + "scratch/" + i, "x"); // no job: more than a read takes, never read
        etcd.put(JOBS + "stray", "x");
        startWatch();
        assertEquals(List.of(7), JobFloodTest.jobs(gateway));
        assertEquals(1, gateway.metric("xaf_registry_groups_skipped"), "job 9 only: scratch/ is not a job");
        assertEquals(1, gateway.metric("xaf_registry_groups_skipped_total"));
        assertEquals(0, gateway.metric("xaf_registry_errors_total"));
        assertEquals(1, gateway.metric("xaf_registry_up"));

        etcd.delete(JOBS + "9/junk/0"); // exactly the limit now
        watch.resyncNow();
        assertEquals(List.of(7, 9), JobFloodTest.jobs(gateway));
        assertEquals(0, gateway.metric("xaf_registry_groups_skipped"));
    }

    @Test
    void theWatchSkipsAJobThatOutgrowsAnAnswerAndKeepsFollowingTheOthers() throws Exception {
        register(7, 2, false);
        register(9, 1, false);
        startWatch();
        assertEquals(List.of(7, 9), JobFloodTest.jobs(gateway));
        String blob = "b".repeat(20 << 10); // each event fits a watch line; four of them do not fit one range answer
        for (int i = 0; i < 4; i++) put(JOBS + "9/blob/" + i, blob, true);
        register(8, 2, true);
        RouteRegistryWatchTest.await(() -> JobFloodTest.jobs(gateway).equals(List.of(7, 8)),
                () -> "job 8 routed, job 9 withdrawn: " + JobFloodTest.jobs(gateway));
        assertEquals(1, gateway.metric("xaf_registry_groups_skipped"));
        assertEquals(1, gateway.metric("xaf_registry_up"), "the watch goes on");
        Thread.sleep(1500); // a recheck of job 9 (still too large) must not bring it back
        assertEquals(List.of(7, 8), JobFloodTest.jobs(gateway));

        for (int i = 0; i < 4; i++) delete(JOBS + "9/blob/" + i);
        RouteRegistryWatchTest.await(() -> JobFloodTest.jobs(gateway).equals(List.of(7, 8, 9)),
                () -> "job 9 read back in once it fits: " + JobFloodTest.jobs(gateway));
        assertEquals(0, gateway.metric("xaf_registry_groups_skipped"));
        assertEquals(1, gateway.metric("xaf_registry_groups_skipped_total"));
        assertEquals(0, gateway.metric("xaf_registry_errors_total"));
    }
}
