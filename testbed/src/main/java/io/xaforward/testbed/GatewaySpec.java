package io.xaforward.testbed;

import java.util.List;

/**
 * A gateway node as declared in a topology: one namespace with one port into every DC it joins.
 *
 * @param index position in the topology file, 0-based; drives the gateway's identity and MACs
 * @param joins names of the data centers it has a port in, in file order
 */
public record GatewaySpec(String name, int index, List<String> joins) {
    public GatewaySpec {
        joins = List.copyOf(joins);
    }
}
