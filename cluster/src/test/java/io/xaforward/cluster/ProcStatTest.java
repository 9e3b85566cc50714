package io.xaforward.cluster;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.*;

/** /proc/stat read once: per-core busy time and single fields, and zeros for a core the machine does not have. */
class ProcStatTest {

    @Test
    void readsBusyTimeAndFieldsOfTheSameMoment() {
        ProcStat stat = ProcStat.read();
        long busy = stat.busyNs("cpu");
        assertTrue(busy > 0, "the machine has run something since boot");
        long parts = stat.ns("cpu", ProcStat.USER) + stat.ns("cpu", ProcStat.NICE) + stat.ns("cpu", ProcStat.SYSTEM)
                + stat.ns("cpu", ProcStat.IRQ) + stat.ns("cpu", ProcStat.SOFTIRQ) + stat.ns("cpu", ProcStat.STEAL);
        assertEquals(busy, parts, "busy = user + nice + system + irq + softirq + steal");
        assertTrue(stat.busyNs("cpu0") > 0 && stat.busyNs("cpu0") <= busy, "core 0 is part of the machine");
        assertEquals(0, stat.busyNs("cpu65535"));
        assertEquals(0, stat.ns("cpu65535", ProcStat.SOFTIRQ));
    }
}
