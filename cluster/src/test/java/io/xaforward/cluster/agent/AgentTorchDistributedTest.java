package io.xaforward.cluster.agent;

import io.xaforward.collective.Algorithm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The torch.distributed backend "xaf" (python/xaforward/torch/distributed.py) through agents of a job of three ranks
 * in two data centers (in-memory network, hierarchical all-reduce), with a 64 KiB segment so that tensors go in
 * pieces through the ring: init_process_group with the agent as the rendezvous, exact collectives (the agent's own
 * and those built from allgather), errors naming what the agent cannot do, a mismatch answered on every rank, and
 * DistributedDataParallel, plain and with a bf16 communication hook, equal to one process on the global batch, with
 * identical weights on every rank.
 */
class AgentTorchDistributedTest {
    @TempDir
    Path dir;

    @Test
    void torchDistributedOverTheAgentsIsExactAndDdpMatchesOneProcess() throws Exception {
        try (LoopbackAgents agents = new LoopbackAgents(dir, new int[]{0, 0, 1}, Algorithm.HIERARCHICAL, 64 << 10,
                Duration.ofSeconds(60)).awaitSockets(Duration.ofSeconds(30))) {
            List<PythonRank> ranks = new ArrayList<>();
            for (int r = 0; r < agents.size; r++) ranks.add(PythonRank.start("torch_distributed.py", agents, r, dir));
            List<String> digests = new ArrayList<>();
            Pattern weights = Pattern.compile("RESULT hook=(\\S+) .* weights=([0-9a-f]{64})");
            for (PythonRank p : ranks) {
                int status = p.await(240);
                String out = p.output();
                System.out.print(out.indent(2));
                assertEquals(0, status, "rank " + p.rank + ":\n" + out);
                assertTrue(out.contains("PASS rank " + p.rank), out);
                for (String call : List.of("send", "recv", "all_to_all_single", "gather")) {
                    assertTrue(out.contains("REFUSED " + call + ": torch.distributed backend 'xaf' does not support " + call), out);
                }
                assertTrue(out.contains("MISMATCH") && out.contains("differs across ranks"), out);
                Matcher m = weights.matcher(out);
                StringBuilder mine = new StringBuilder();
                while (m.find()) mine.append(m.group(1)).append(':').append(m.group(2)).append(' ');
                digests.add(mine.toString());
            }
            assertTrue(digests.get(0).contains("none:") && digests.get(0).contains("bf16_hook:"), digests.get(0));
            for (String d : digests) assertEquals(digests.get(0), d, "every rank ends with identical weights");
            String[] runs = digests.get(0).trim().split(" ");
            assertTrue(!runs[0].substring(runs[0].indexOf(':')).equals(runs[1].substring(runs[1].indexOf(':'))),
                    "the bf16 hook ran: its weights are not the plain run's " + digests.get(0));
            for (int r = 0; r < agents.size; r++) {
                assertEquals(0, agents.exits.get(r).get(60, TimeUnit.SECONDS), "rank " + r + "'s agent ends after bye");
            }
        }
    }
}
