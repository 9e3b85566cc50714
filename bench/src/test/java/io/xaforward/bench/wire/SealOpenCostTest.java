package io.xaforward.bench.wire;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SealOpenCostTest {
    /** Each variant seals and opens (it throws when a datagram does not open); OpenSSL's allocate nothing. */
    @Test
    void variantsOfThisJvmsLibraryRoundTrip() {
        for (SealOpenCost.Variant v : new SealOpenCost.Variant[] {SealOpenCost.Variant.CRC32C,
                SealOpenCost.Variant.MAC_HMAC_BEFORE, SealOpenCost.Variant.MAC_OPENSSL,
                SealOpenCost.Variant.ENCRYPT_OPENSSL}) {
            double[] r = SealOpenCost.measureHere(v, 1400, 20_000);
            assertTrue(r[0] > 0 && r[1] > 0, v + " took no time");
            assertTrue(r[2] < 1, v + " allocated " + r[2] + " B/datagram");
        }
    }

    /** A variant whose library this JVM does not run is refused, not measured under the wrong name. */
    @Test
    void aVariantOfTheOtherLibraryIsRefused() {
        var e = assertThrows(IllegalStateException.class,
                () -> SealOpenCost.measureHere(SealOpenCost.Variant.MAC_JDK, 1400, 10));
        assertTrue(e.getMessage().contains("-Dxaf.wire.crypto=jdk"), e.getMessage());
    }

    @Test
    void tableHasARowPerVariant() {
        String md = SealOpenCost.table(List.of(new SealOpenCost.Row("mac: AES-256-GMAC", "x", 400, 321.4, 0)));
        assertEquals("| variant | library | CPU ns per seal + open | wall ns per seal + open | B allocated/datagram |\n"
                + "|---|---|---:|---:|---:|\n| mac: AES-256-GMAC | x | 321 | 400 | 0 |\n", md);
    }
}
