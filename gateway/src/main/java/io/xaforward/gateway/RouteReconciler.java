package io.xaforward.gateway;

import io.xaforward.dataplane.Route;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Makes the route map hold exactly a wanted set of routes, all or nothing, writing only the difference.
 *
 * <p>The reconciler keeps its own view of what the map holds: read from the map once, when it is made
 * ({@link #readFrom}: a fresh map is empty, an adopted pinned one keeps the routes that forward now, and a route that
 * something else left behind is removed by the first update), and from then on updated with every write it makes. An
 * update ({@link #apply}) compares the wanted set with that view and makes one map write per added, changed or removed
 * route and nothing more: it never reads the map back, so a registry update that changes one route of 60,000 costs
 * one syscall, not 120,000 lookups under the gateway's lock.
 *
 * <p>New and changed routes are written first (each an atomic map update) and removed routes deleted last, so traffic
 * of unchanged routes never sees a gap. If any write fails, every write already made is undone in reverse order, and
 * the map is back to what it held before. If an undo fails too, the view no longer knows what the map holds: the next
 * update reads the map again before it compares.
 */
final class RouteReconciler {
    record Result(int added, int changed, int removed) {}

    private final RouteTable table;
    /** What the map holds, as far as this reconciler wrote or read it. */
    private final Map<Integer, Route> installed;
    /** An undo failed: {@link #installed} may be wrong, read the map again before the next update. */
    private boolean stale;

    private RouteReconciler(RouteTable table, Map<Integer, Route> installed) {
        this.table = table;
        this.installed = installed;
    }

    /** A reconciler of {@code table}, starting from what the table holds now (one read of every route). */
    static RouteReconciler readFrom(RouteTable table) {
        return new RouteReconciler(table, read(table));
    }

    /** One reconcile of {@code table} against its real contents: {@code readFrom(table).apply(wanted)}. */
    static Result apply(RouteTable table, Map<Integer, Route> wanted) {
        return readFrom(table).apply(wanted);
    }

    private static Map<Integer, Route> read(RouteTable table) {
        Map<Integer, Route> m = new HashMap<>();
        for (int id : table.ids()) {
            Route r = table.get(id);
            if (r != null) m.put(id, r);
        }
        return m;
    }

    /** The routes this reconciler believes the map holds (a copy). */
    Map<Integer, Route> installed() {
        return Map.copyOf(installed);
    }

    /** Writes the difference between what the map holds and {@code wanted}; on failure the map is as before. */
    Result apply(Map<Integer, Route> wanted) {
        if (wanted.size() > table.capacity()) {
            throw new IllegalArgumentException(wanted.size() + " routes, more than the " + table.capacity()
                    + " the route map holds");
        }
        if (stale) {
            installed.clear();
            installed.putAll(read(table));
            stale = false;
        }
        List<Integer> written = new ArrayList<>();
        int added = 0, changed = 0, removed = 0;
        try {
            for (Map.Entry<Integer, Route> e : wanted.entrySet()) {
                Route current = installed.get(e.getKey());
                if (e.getValue().equals(current)) continue;
                written.add(e.getKey());
                table.put(e.getKey(), e.getValue());
                if (current == null) added++; else changed++;
            }
            for (int id : installed.keySet()) {
                if (wanted.containsKey(id)) continue;
                written.add(id);
                if (table.delete(id)) removed++;
            }
        } catch (RuntimeException e) {
            List<RuntimeException> undoFailures = new ArrayList<>();
            for (int i = written.size() - 1; i >= 0; i--) {
                int id = written.get(i);
                try {
                    Route old = installed.get(id);
                    if (old == null) table.delete(id); else table.put(id, old);
                } catch (RuntimeException undo) {
                    undoFailures.add(undo);
                }
            }
            stale = !undoFailures.isEmpty();
            RuntimeException failure = new IllegalStateException("route update failed, "
                    + (undoFailures.isEmpty() ? "previous routes restored" : undoFailures.size() + " routes could not be restored")
                    + ": " + e.getMessage(), e);
            undoFailures.forEach(failure::addSuppressed);
            throw failure;
        }
        for (int id : written) {
            Route r = wanted.get(id);
            if (r == null) installed.remove(id); else installed.put(id, r);
        }
        return new Result(added, changed, removed);
    }
}
