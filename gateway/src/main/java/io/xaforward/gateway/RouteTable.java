package io.xaforward.gateway;

import io.xaforward.dataplane.Route;
import io.xaforward.dataplane.XafDataplane;

import java.util.List;

/** The route map as the reconciler sees it: what the kernel holds, and single-key writes. */
interface RouteTable {
    List<Integer> ids();

    Route get(int networkId);

    void put(int networkId, Route route);

    boolean delete(int networkId);

    int capacity();

    static RouteTable of(XafDataplane dp) {
        return new RouteTable() {
            @Override public List<Integer> ids() { return dp.routeIds(); }
            @Override public Route get(int networkId) { return dp.route(networkId); }
            @Override public void put(int networkId, Route route) { dp.putRoute(networkId, route); }
            @Override public boolean delete(int networkId) { return dp.deleteRoute(networkId); }
            @Override public int capacity() { return dp.routesMap().maxEntries(); }
        };
    }
}
