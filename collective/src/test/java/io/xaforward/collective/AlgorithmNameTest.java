package io.xaforward.collective;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.*;

/** Algorithm names: the aliases beside the words (the words themselves: cli's ConfigWordsTest). */
class AlgorithmNameTest {
    @Test
    void aliasesReadAsTheirAlgorithm() {
        assertEquals(Algorithm.HIERARCHICAL, Algorithm.fromName(" Hier "));
        assertEquals(Algorithm.PARAMETER_SERVER, Algorithm.fromName("parameter-server"));
        assertEquals(Algorithm.PARAMETER_SERVER, Algorithm.fromName("parameter_server"));
        var e = assertThrows(IllegalArgumentException.class, () -> Algorithm.fromName("tree"));
        assertEquals("unknown all-reduce algorithm 'tree'; expected one of ring, hierarchical, ps", e.getMessage());
    }
}
