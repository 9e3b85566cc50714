package io.xaforward.bench;

import com.google.gson.JsonParser;
import io.xaforward.testbed.mode.GatewayMode;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The forwarding bench's modes: the reference and the gateway modes it measures, by their words. */
class ForwardBenchModeTest {

    @Test
    void wordsReadBackAndNameTheGatewayMode() {
        for (ForwardBench.Mode m : ForwardBench.Mode.values()) assertEquals(m, ForwardBench.Mode.fromName(m.configName()));
        assertEquals(ForwardBench.Mode.REFERENCE, ForwardBench.Mode.fromName("xdp-bench"));
        assertNull(ForwardBench.Mode.REFERENCE.gateway());
        assertEquals(GatewayMode.RELAY, ForwardBench.Mode.RELAY.gateway());
        assertEquals("relay", ForwardBench.Mode.RELAY.configName());
        assertEquals(ForwardBench.Mode.REFERENCE, ForwardBench.Mode.fromName("Ref"));
        var e = assertThrows(IllegalArgumentException.class, () -> ForwardBench.Mode.fromName("kernel-tunnel"));
        assertEquals("the forwarding bench does not measure the kernel-tunnel mode; expected one of reference, xdp,"
                + " kernel, relay, afxdp", e.getMessage());
    }

    /**
     * Where the kernel refuses live frames, every mode is measured with socket senders, and the report says why the
     * live rows are missing instead of leaving them out silently; where it allows them, the XDP modes get both.
     */
    @Test
    void aKernelThatRefusesLiveFramesGetsSocketSendersAndSaysSo() {
        LiveFrameGenerator.Support refused = LiveFrameGenerator.Support.refused("this kernel refuses live frames (errno 1)");
        for (ForwardBench.Mode m : ForwardBench.Mode.values()) {
            assertEquals(List.of(ForwardBench.Sender.SKB), ForwardBench.senders(m, false, refused), m.label());
        }
        assertEquals(List.of(ForwardBench.Sender.LIVE, ForwardBench.Sender.SKB),
                ForwardBench.senders(ForwardBench.Mode.XDP, false, LiveFrameGenerator.Support.YES));
        assertEquals(List.of(ForwardBench.Sender.SKB), ForwardBench.senders(ForwardBench.Mode.KERNEL, false, LiveFrameGenerator.Support.YES));

        ForwardBench.Options options = new ForwardBench.Options(false, 1, List.of(64), List.of(ForwardBench.Mode.XDP), 1000, 0);
        ForwardBench.Result r = new ForwardBench.Result(options, List.of(), List.of(), "2 CPUs", "xaf bench forward", refused.reason());
        String md = BenchReport.markdown(r, BenchReport.rows(r));
        assertTrue(md.contains("**No live rows in this run:** this kernel refuses live frames (errno 1)."), md);
        assertTrue(md.contains("xdp (live generator, no veth copy) / kernel (skb) pps: not measured in this run"), md);
        assertEquals(refused.reason(), JsonParser.parseString(BenchReport.json(r)).getAsJsonObject().get("live_frames_refused").getAsString());
        ForwardBench.Result live = new ForwardBench.Result(options, List.of(), List.of(), "2 CPUs", "xaf bench forward");
        assertFalse(BenchReport.markdown(live, BenchReport.rows(live)).contains("No live rows"));
    }
}
