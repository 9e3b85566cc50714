package io.xaforward.transport;

/**
 * What the event loop does after a pass that found no work (Agrona's IdleStrategy, in small): spin for a few
 * passes, since work usually follows work within microseconds, then sleep until something can happen.
 */
final class IdleStrategy {
    /** Sleeps for at most as long as the loop can afford; {@code idlePasses} counts the empty passes so far. */
    interface Sleeper {
        void sleep(int idlePasses);
    }

    private final int spinPasses;
    private final Sleeper sleeper;
    private int idlePasses;

    IdleStrategy(int spinPasses, Sleeper sleeper) {
        this.spinPasses = spinPasses;
        this.sleeper = sleeper;
    }

    /** Called after every pass with the work it did. */
    void idle(int workDone) {
        if (workDone > 0) {
            idlePasses = 0;
        } else if (++idlePasses < spinPasses) {
            Thread.onSpinWait();
        } else {
            sleeper.sleep(idlePasses);
        }
    }
}
