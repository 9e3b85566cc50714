package io.xaforward.gateway;

/**
 * The Java engines' route map: network index identifier to the engine's own route record, open addressing with linear
 * probing. Filled once when an engine starts ({@link #put}); {@link #get} is the per-packet lookup and allocates
 * nothing (no boxing, no iterator). Not safe for writes concurrent with reads: the engines fill it before their
 * forwarding threads start.
 *
 * @param <R> the engine's route record
 */
public final class RouteMap<R> {
    private int[] keys = new int[64];
    private Object[] values = new Object[64];
    private int size;

    /** Maps {@code networkId} to {@code route} (non-null), replacing any route it had. */
    public void put(int networkId, R route) {
        if (route == null) throw new IllegalArgumentException("route is null");
        if ((size + 1) * 2 > keys.length) grow();
        int mask = keys.length - 1;
        int i = slot(networkId, mask);
        while (values[i] != null && keys[i] != networkId) i = (i + 1) & mask;
        if (values[i] == null) size++;
        keys[i] = networkId;
        values[i] = route;
    }

    /** The route of {@code networkId}, or null. */
    @SuppressWarnings("unchecked")
    public R get(int networkId) {
        int mask = keys.length - 1;
        for (int i = slot(networkId, mask); values[i] != null; i = (i + 1) & mask)
            if (keys[i] == networkId) return (R) values[i];
        return null;
    }

    /** How many identifiers have a route. */
    public int size() {
        return size;
    }

    private static int slot(int key, int mask) {
        return (key * 0x9E3779B9 >>> 16) & mask;
    }

    @SuppressWarnings("unchecked")
    private void grow() {
        int[] k = keys;
        Object[] v = values;
        keys = new int[k.length * 2];
        values = new Object[k.length * 2];
        size = 0;
        for (int i = 0; i < k.length; i++) if (v[i] != null) put(k[i], (R) v[i]);
    }
}
