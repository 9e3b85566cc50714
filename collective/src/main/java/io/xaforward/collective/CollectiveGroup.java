package io.xaforward.collective;

import java.util.Arrays;
import java.util.Objects;

/**
 * Who takes part in a collective and where each rank sits: this rank, the world size and the data center of every
 * rank. A plain description (no topology files, no addresses) so the collective layer stays independent of how the
 * testbed plans networks; the transport's address book says how to reach each rank.
 *
 * <p>Data center ids are arbitrary non-negative ints; data centers are ordered by id and their members by rank, which
 * fixes the summation order of every algorithm (so all ranks obtain bitwise-identical results).
 */
public record CollectiveGroup(int rank, int worldSize, int[] datacenterOfRank) {

    public CollectiveGroup {
        Objects.requireNonNull(datacenterOfRank, "datacenterOfRank");
        if (worldSize < 1) {
            throw new IllegalArgumentException("world size must be positive, was " + worldSize);
        }
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " is outside [0, " + worldSize + ")");
        }
        if (datacenterOfRank.length != worldSize) {
            throw new IllegalArgumentException("datacenterOfRank has " + datacenterOfRank.length
                    + " entries for a world of " + worldSize + " ranks");
        }
        for (int r = 0; r < worldSize; r++) {
            if (datacenterOfRank[r] < 0) {
                throw new IllegalArgumentException("rank " + r + " has negative data center id "
                        + datacenterOfRank[r]);
            }
        }
        datacenterOfRank = datacenterOfRank.clone();
    }

    /** All ranks in one data center. */
    public static CollectiveGroup flat(int rank, int worldSize) {
        return new CollectiveGroup(rank, worldSize, new int[worldSize]);
    }

    @Override
    public int[] datacenterOfRank() {
        return datacenterOfRank.clone();
    }

    /** Distinct data center ids, ascending: index i of this array is "data center index" i. */
    public int[] datacenterIds() {
        return Arrays.stream(datacenterOfRank).distinct().sorted().toArray();
    }

    public int datacenterCount() {
        return datacenterIds().length;
    }

    /** Dense index (position in {@link #datacenterIds()}) of the data center of {@code r}. */
    public int datacenterIndexOf(int r) {
        checkRank(r);
        return Arrays.binarySearch(datacenterIds(), datacenterOfRank[r]);
    }

    /** Ranks of the data center with dense index {@code dcIndex}, ascending. */
    public int[] membersOf(int dcIndex) {
        int id = datacenterIds()[dcIndex];
        int[] members = new int[worldSize];
        int n = 0;
        for (int r = 0; r < worldSize; r++) {
            if (datacenterOfRank[r] == id) {
                members[n++] = r;
            }
        }
        return Arrays.copyOf(members, n);
    }

    /** Members of every data center: {@code result[dcIndex]} as {@link #membersOf(int)}. */
    public int[][] datacenters() {
        int count = datacenterCount();
        int[][] all = new int[count][];
        for (int d = 0; d < count; d++) {
            all[d] = membersOf(d);
        }
        return all;
    }

    private void checkRank(int r) {
        if (r < 0 || r >= worldSize) {
            throw new IllegalArgumentException("rank " + r + " is outside [0, " + worldSize + ")");
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CollectiveGroup g && g.rank == rank && g.worldSize == worldSize
                && Arrays.equals(g.datacenterOfRank, datacenterOfRank);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * rank + worldSize) + Arrays.hashCode(datacenterOfRank);
    }

    @Override
    public String toString() {
        return "CollectiveGroup[rank=" + rank + ", worldSize=" + worldSize + ", datacenterOfRank="
                + Arrays.toString(datacenterOfRank) + "]";
    }
}
