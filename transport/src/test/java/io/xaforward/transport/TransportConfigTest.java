package io.xaforward.transport;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The settings every job's ranks start from, and the chunk payload a path MTU leaves. */
class TransportConfigTest {

    @Test
    void jobSettingsAreOneWindowOneMessageLimitAndTheGivenPayloadAndTimeout() {
        TransportConfig c = TransportConfig.forJob(2, 7, 0xC0FFEE, 1200, Duration.ofSeconds(3)).build();
        assertEquals(2, c.localRank());
        assertEquals(7, c.jobId());
        assertEquals(0xC0FFEE, c.jobToken());
        assertEquals(1200, c.maxPayload());
        assertEquals(512, c.windowChunks());
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
}
