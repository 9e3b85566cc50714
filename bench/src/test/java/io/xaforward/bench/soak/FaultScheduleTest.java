package io.xaforward.bench.soak;

import io.xaforward.bench.soak.FaultSchedule.Component;
import io.xaforward.bench.soak.FaultSchedule.Fault;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

class FaultScheduleTest {

    @Test
    void readsWhatItWritesInTimeOrder() {
        FaultSchedule s = FaultSchedule.parse("gateway@180, worker2@120,etcd@300.5", 4, 1);
        assertEquals(List.of(new Fault(120, Component.WORKER, 2), new Fault(180, Component.GATEWAY, -1),
                new Fault(300.5, Component.ETCD, -1)), s.faults());
        assertEquals("worker2@120,gateway@180,etcd@300.5", s.word());
        assertEquals(s, FaultSchedule.parse(s.word(), 4, 99));
    }

    @Test
    void aWorkerWithoutRankGetsOneFromTheSeed() {
        int a = FaultSchedule.parse("worker@10", 4, 5).faults().getFirst().rank();
        assertEquals(a, FaultSchedule.parse("worker@10", 4, 5).faults().getFirst().rank());
        assertTrue(a >= 0 && a < 4);
    }

    @Test
    void badEntriesAreNamed() {
        for (String bad : List.of("router@10", "worker@", "gateway1@10", "worker4@10", "worker1@-3", "", " , ")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> FaultSchedule.parse(bad, 4, 1), bad);
            assertTrue(e.getMessage().contains("--schedule"), e.getMessage());
        }
    }

    @Test
    void theStandardScheduleFollowsItsPeriodsAndTheSeed() {
        FaultSchedule s = FaultSchedule.standard(600, 4, 7);
        assertEquals(s, FaultSchedule.standard(600, 4, 7), "the same seed gives the same schedule");
        assertNotEquals(s, FaultSchedule.standard(600, 4, 8));
        long workers = s.faults().stream().filter(f -> f.component() == Component.WORKER).count();
        long gateways = s.faults().stream().filter(f -> f.component() == Component.GATEWAY).count();
        long etcd = s.faults().stream().filter(f -> f.component() == Component.ETCD).count();
        assertEquals(4, workers, s.word()); // about 120, 240, 360, 480 s; 600 is within the last 30 s
        assertEquals(3, gateways, s.word()); // about 180, 360, 540 s
        assertEquals(1, etcd, s.word());
        for (Fault f : s.faults()) {
            assertTrue(f.atSeconds() > 0 && f.atSeconds() < 600 - 30 + 36, f.word());
            if (f.component() == Component.ETCD) assertTrue(f.atSeconds() >= 200 && f.atSeconds() <= 400, f.word());
        }
        assertThrows(IllegalArgumentException.class, () -> FaultSchedule.standard(20, 4, 1), "no fault fits 20 s");
    }
}
