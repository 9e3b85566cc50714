package io.xaforward.training;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Streaming DiLoCo's fragments (whole layers, contiguous in flat order) and their staggered schedule. */
class FragmentPlanTest {
    /** wte, wpe; 3 tensors per block for 4 blocks; final norm gamma and beta. */
    private static final int[] LAYERS = {-1, -1, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4};

    private static DilocoConfig config(int h, int f, int d) {
        return new DilocoConfig(h, f, d, 0.7, 0.9);
    }

    @Test
    void oneFragmentIsPlainDilocoEveryHSteps() {
        FragmentPlan plan = new FragmentPlan(LAYERS, 4, config(5, 1, 0));
        assertEquals(0, plan.firstTensor(0));
        assertEquals(LAYERS.length, plan.endTensor(0));
        List<Long> syncs = new ArrayList<>();
        for (long t = 0; t <= 20; t++) if (plan.startsSyncAfter(0, t)) syncs.add(t);
        assertEquals(List.of(5L, 10L, 15L, 20L), syncs);
        assertEquals(5, plan.applyStep(5));
    }

    @Test
    void fragmentsAreWholeLayersWithEmbeddingsFirstAndTheFinalNormLast() {
        FragmentPlan plan = new FragmentPlan(LAYERS, 4, config(8, 2, 0));
        assertEquals(0, plan.firstTensor(0));
        assertEquals(8, plan.endTensor(0));     // embeddings, blocks 0 and 1
        assertEquals(8, plan.firstTensor(1));
        assertEquals(16, plan.endTensor(1));    // blocks 2 and 3, final norm
        FragmentPlan four = new FragmentPlan(LAYERS, 4, config(8, 4, 0));
        int[] expectedFirst = {0, 5, 8, 11};
        for (int f = 0; f < 4; f++) {
            assertEquals(expectedFirst[f], four.firstTensor(f), "fragment " + f);
            assertEquals(f == 3 ? 16 : expectedFirst[f + 1], four.endTensor(f));
        }
    }

    @Test
    void fragmentsSyncAtStaggeredStepsOncePerRoundAndApplyDLater() {
        FragmentPlan plan = new FragmentPlan(LAYERS, 4, config(8, 4, 3));
        // offsets floor((f+1)*8/4) mod 8 = 2, 4, 6, 0: evenly spread, the last at multiples of H
        assertEquals(List.of(2, 4, 6, 0), List.of(plan.offset(0), plan.offset(1), plan.offset(2), plan.offset(3)));
        for (long t = 1; t <= 32; t++) {
            int starting = 0;
            for (int f = 0; f < 4; f++) if (plan.startsSyncAfter(f, t)) starting++;
            assertTrue(starting <= 1, "at most one fragment starts per step, step " + t);
            assertEquals(t % 2 == 0 ? 1 : 0, starting, "step " + t);
        }
        for (int f = 0; f < 4; f++) {
            int count = 0;
            for (long t = 1; t <= 32; t++) if (plan.startsSyncAfter(f, t)) count++;
            assertEquals(4, count, "fragment " + f + " syncs once per round of 8 steps");
        }
        assertFalse(plan.startsSyncAfter(3, 0), "nothing syncs before the first step");
        assertEquals(13, plan.applyStep(10));
    }

    @Test
    void unevenFragmentsStillCoverEveryTensorOnce() {
        FragmentPlan plan = new FragmentPlan(LAYERS, 4, config(9, 3, 0));
        assertEquals(0, plan.firstTensor(0));
        for (int f = 1; f < 3; f++) assertEquals(plan.endTensor(f - 1), plan.firstTensor(f));
        assertEquals(LAYERS.length, plan.endTensor(2));
        assertEquals(List.of(3, 6, 0), List.of(plan.offset(0), plan.offset(1), plan.offset(2)));
    }

    @Test
    void malformedSettingsAreRefusedWithTheOptionNamed() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> config(0, 1, 0)).getMessage().contains("--sync-every"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> config(4, 0, 0)).getMessage().contains("--fragments"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> config(4, 5, 0)).getMessage().contains("--fragments"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> config(4, 1, 4)).getMessage()
                .contains("--fragment-sync-delay"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> config(4, 1, -1)).getMessage()
                .contains("--fragment-sync-delay"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new DilocoConfig(4, 1, 0, 0, 0.9)).getMessage()
                .contains("--outer-lr"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new DilocoConfig(4, 1, 0, 0.7, 1.0)).getMessage()
                .contains("--outer-momentum"));
        // the tiny preset has 2 layers: 3 fragments cannot be whole layers
        IllegalArgumentException tooMany = assertThrows(IllegalArgumentException.class,
                () -> TrainerConfig.builder("tiny").diloco(config(4, 3, 0)).build());
        assertTrue(tooMany.getMessage().contains("layers"), tooMany.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new FragmentPlan(new int[]{-1, 1, 0, 2}, 2, config(4, 2, 0)),
                "a flat order that jumps back a layer cannot be cut into whole layers");
    }
}
