package io.xaforward.transport;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The settings every job's ranks start from, and the chunk payload a path MTU leaves. */
class TransportConfigTest {

    @Test
    void jobSettingsAreOneWindowOneMessageLimitAndTheGivenPayloadAndTimeout() {
        TransportConfig c = TransportConfig.forJob(2, 7, 0xC0FFEE, 1200, Duration.ofSeconds(3)).build();
        assertEquals(2, c.localRank());
        assertEquals(7, c.jobId());
        assertEquals(0xC0FFEE, c.jobToken());
        assertEquals(1200, c.maxPayload());
        assertEquals(TransportConfig.JOB_WINDOW_CHUNKS, c.windowChunks());
        assertTrue(c.windowFitsFlows(), "a job's window shrinks to what its flows' replay window holds");
        assertEquals(CongestionControl.RATE, c.congestionControl());
        assertEquals(1L << 30, c.maxMessageBytes());
        assertEquals(Duration.ofSeconds(3), c.ackTimeout());
        assertEquals(1L << 30, TransportConfig.builder(0, 1, 1).build().maxMessageBytes(), "the builder's own default");
    }

    @Test
    void payloadForAnyFormLeavesRoomForIpv6UdpAndTheXafHeader() {
        assertEquals(1500 - 40 - 8 - 48, TransportConfig.maxPayloadForAnyForm(1500));
        assertEquals(8904, TransportConfig.maxPayloadForAnyForm(9000));
        assertEquals(1180, TransportConfig.maxPayloadForAnyForm(1279), "whole floats: 1183 bytes fit, 1180 are used");
    }

    @Test
    void aJobsChunksStayAtTheStandardPayloadOnStandardPathsAndGrowOnlyOnJumboOnes() {
        assertEquals(TransportConfig.DEFAULT_MAX_PAYLOAD, TransportConfig.jobChunkPayload(1500, 0),
                "1404 bytes would fit a 1500-byte path; jobs keep 1400");
        assertEquals(1180, TransportConfig.jobChunkPayload(1279, 0), "a smaller MTU shrinks the chunks");
        assertEquals(1352, TransportConfig.jobChunkPayload(1500, 50), "a tunnel's 50 bytes of headers come off");
        assertEquals(8904, TransportConfig.jobChunkPayload(9000, 0), "jumbo paths give jumbo chunks");
        assertEquals(8852, TransportConfig.jobChunkPayload(9000, 50));
    }
}
