package io.xaforward.collective;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.*;

/** Algorithm names parse strictly: every algorithm round-trips, an unknown name is an error naming the choices. */
class AlgorithmNameTest {
    @Test
    void everyAlgorithmRoundTripsThroughItsName() {
        for (Algorithm a : Algorithm.values()) assertEquals(a, Algorithm.fromName(a.configName()));
        assertEquals(Algorithm.HIERARCHICAL, Algorithm.fromName(" Hierarchical "));
        assertEquals(Algorithm.PARAMETER_SERVER, Algorithm.fromName("parameter-server"));
    }

    @Test
    void unknownNameIsAnErrorNotADefault() {
        var e = assertThrows(IllegalArgumentException.class, () -> Algorithm.fromName("tree"));
        assertTrue(e.getMessage().contains("'tree'") && e.getMessage().contains("hierarchical, ring or ps"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Algorithm.fromName(null));
        assertThrows(IllegalArgumentException.class, () -> Algorithm.fromName(""));
    }
}
