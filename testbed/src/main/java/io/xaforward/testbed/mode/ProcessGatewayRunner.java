package io.xaforward.testbed.mode;

import java.util.List;

/** A gateway mode whose forwarding runs in a process of its own in the gateway namespace (xdp, relay, afxdp). */
abstract class ProcessGatewayRunner implements GatewayRunner {
    /** The gateway process once started; null before and after. */
    protected GatewayProcess process;

    @Override
    public List<Long> processIds() {
        return process == null ? List.of() : List.of(process.pid());
    }

    /** Everything the gateway process printed so far. */
    public List<String> processOutput() {
        return process == null ? List.of() : process.output();
    }
}
