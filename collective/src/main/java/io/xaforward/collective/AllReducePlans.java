package io.xaforward.collective;

import java.util.HashMap;
import java.util.Map;

/**
 * The all-reduce plans of one {@link Collectives} instance, built on first use and reused: one per algorithm, element
 * count and wire format. The key is a record built here from typed arguments, so a caller cannot look a plan up by a
 * key of the wrong kind, and every value is an {@link AllReducePlan}.
 *
 * <p>Not thread-safe: its {@link Collectives} calls it under its own lock.
 */
final class AllReducePlans {

    /** What a plan depends on: a new algorithm, count or wire format needs staging buffers of its own. */
    private record Key(Algorithm algorithm, int count, WireDtype wireDtype) {
    }

    /** Builds the plan of a key the first time it is asked for. */
    @FunctionalInterface
    interface Builder {
        AllReducePlan build(Algorithm algorithm, int count, WireDtype wireDtype);
    }

    private final Map<Key, AllReducePlan> plans = new HashMap<>();
    private final Builder builder;

    AllReducePlans(Builder builder) {
        this.builder = builder;
    }

    /** The plan of an all-reduce of {@code count} floats with {@code algorithm} in {@code wireDtype}, built once. */
    AllReducePlan plan(Algorithm algorithm, int count, WireDtype wireDtype) {
        return plans.computeIfAbsent(new Key(algorithm, count, wireDtype),
                k -> builder.build(k.algorithm(), k.count(), k.wireDtype()));
    }

    /** Bytes of staging buffers held by every plan built so far. */
    long stagingBytes() {
        long total = 0;
        for (AllReducePlan plan : plans.values()) {
            total += plan.stagingBytes();
        }
        return total;
    }

    /** Number of plans built so far. */
    int size() {
        return plans.size();
    }

    /** Forgets every plan (their buffers belong to the arena their owner closes). */
    void clear() {
        plans.clear();
    }
}
