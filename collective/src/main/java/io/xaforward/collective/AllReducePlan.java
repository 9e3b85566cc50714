package io.xaforward.collective;

import java.lang.foreign.MemorySegment;

/**
 * An all-reduce prepared for one element count: its staging buffers are allocated once, when the plan is built, and
 * reused by every later step of that count ({@link AllReducePlans} keeps one per algorithm, count and wire format).
 * Sealed so that {@link Collectives} knows every kind of plan it may be handed; an abstract class rather than an
 * interface so that the operations stay package-private.
 */
abstract sealed class AllReducePlan permits RingAllReduce, ParameterServerAllReduce {

    /** Posts every expect of one all-reduce of {@code data} as message step {@code step}, then its first sends. */
    abstract void start(Operation op, MemorySegment data, int step);

    /** Bytes of staging buffers this plan holds. */
    abstract long stagingBytes();
}
