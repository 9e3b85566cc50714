package io.xaforward.gateway;

import io.xaforward.dataplane.Route;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Makes the route map hold exactly a wanted set of routes, all or nothing.
 *
 * <p>The starting point is the map's real contents, not the previous config: a route that something else left
 * behind is removed too. New and changed routes are written first (each an atomic map update) and removed routes
 * deleted last, so traffic of unchanged routes never sees a gap. If any write fails, every write already made is
 * undone in reverse order, and the map is back to what it held before.
 */
final class RouteReconciler {
    private RouteReconciler() {}

    record Result(int added, int changed, int removed) {}

    static Result apply(RouteTable table, Map<Integer, Route> wanted) {
        if (wanted.size() > table.capacity()) {
            throw new IllegalArgumentException(wanted.size() + " routes, more than the " + table.capacity()
                    + " the route map holds");
        }
        Map<Integer, Route> before = new HashMap<>();
        for (int id : table.ids()) {
            Route r = table.get(id);
            if (r != null) before.put(id, r);
        }
        List<Integer> written = new ArrayList<>();
        int added = 0, changed = 0, removed = 0;
        try {
            for (Map.Entry<Integer, Route> e : wanted.entrySet()) {
                Route current = before.get(e.getKey());
                if (e.getValue().equals(current)) continue;
                written.add(e.getKey());
                table.put(e.getKey(), e.getValue());
                if (current == null) added++; else changed++;
            }
            for (int id : before.keySet()) {
                if (wanted.containsKey(id)) continue;
                written.add(id);
                if (table.delete(id)) removed++;
            }
        } catch (RuntimeException e) {
            List<RuntimeException> undoFailures = new ArrayList<>();
            for (int i = written.size() - 1; i >= 0; i--) {
                int id = written.get(i);
                try {
                    Route old = before.get(id);
                    if (old == null) table.delete(id); else table.put(id, old);
                } catch (RuntimeException undo) {
                    undoFailures.add(undo);
                }
            }
            RuntimeException failure = new IllegalStateException("route update failed, "
                    + (undoFailures.isEmpty() ? "previous routes restored" : undoFailures.size() + " routes could not be restored")
                    + ": " + e.getMessage(), e);
            undoFailures.forEach(failure::addSuppressed);
            throw failure;
        }
        return new Result(added, changed, removed);
    }
}
