package io.xaforward.dataplane;

import io.xaforward.testkit.ProgTestRun;
import org.junit.jupiter.api.Test;

import java.util.Set;
import java.util.TreeSet;

import static io.xaforward.dataplane.GoldenFixtures.*;
import static io.xaforward.dataplane.SharedLayouts.FORM_ID;
import static io.xaforward.dataplane.SharedLayouts.FORM_IPV4;
import static io.xaforward.dataplane.SharedLayouts.FORM_IPV6;
import static io.xaforward.dataplane.TestFrames.*;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A route's UDP source-port span through the compiled XDP program (BPF_PROG_TEST_RUN on lo): the flows one sender
 * keeps apart by UDP source port (9450..9453) leave a route of span 4 from four distinct ports in
 * [src-port, src-port + 4), each the one PROTOCOL.md §7 names, with a correct UDP checksum; behind an ID-form hop
 * src_rank alone picks the port; span 1 leaves every flow on src-port. The golden packets (span.txt) hold the same
 * cases byte for byte; this test states the properties.
 */
class SourcePortSpanTest {
    static final int RANK = 3;

    /** The UDP source port and checksum check of the frame the program leaves for one ingress frame. */
    static int egressPort(XafDataplane dp, int in, int out, int sport, int rank) {
        byte[] frame = ingress(in, sport, Xaf.of(9, NET, JOB, TOKEN, payload(211, sport + rank)).withSrcRank(rank).bytes());
        ProgTestRun.Result r = ProgTestRun.run(dp.programFd(), frame, LO, 0);
        assertEquals(ProgTestRun.XDP_REDIRECT, r.action(), r::actionName);
        byte[] f = r.frame();
        int udp = out == FORM_IPV6 ? 14 + 40 : 14 + 20;
        assertEquals(udpChecksum(f), getShort(f, udp + 6), "UDP checksum over the header as written");
        if (out == FORM_IPV4) assertEquals(ipv4HeaderChecksum(f, 14), getShort(f, 24), "IPv4 header checksum");
        assertEquals(XAF_PORT, getShort(f, udp + 2), "destination port");
        return getShort(f, udp);
    }

    static XafDataplane gateway(int in, int out, int span) {
        XafDataplane dp = XafDataplane.load();
        boolean v6 = out == FORM_IPV6;
        dp.setPort(LO, IN_SLOT, in);
        dp.setTxPort(TX_SLOT, LO);
        dp.putRoute(NET, Route.forward(TX_SLOT, out, 0, JOB, TOKEN, SRC_ID, R_SMAC, R_DMAC, v6 ? R_SIP6 : R_SIP4,
                v6 ? R_DIP6 : R_DIP4, R_SPORT, XAF_PORT).withSrcPortSpan(span));
        return dp;
    }

    @Test
    void fourFlowsOfOneSenderLeaveFromFourPortsOfTheSpan() {
        for (int in : new int[] {FORM_IPV4, FORM_IPV6}) {
            for (int out : new int[] {FORM_IPV4, FORM_IPV6}) {
                try (XafDataplane dp = gateway(in, out, 4)) {
                    Set<Integer> ports = new TreeSet<>();
                    for (int sport = 9450; sport <= 9453; sport++) {
                        int p = egressPort(dp, in, out, sport, RANK);
                        String what = in + " -> " + out + " from " + sport;
                        assertEquals(R_SPORT + (RANK + sport) % 4, p, what);
                        ports.add(p);
                    }
                    assertEquals(Set.of(R_SPORT, R_SPORT + 1, R_SPORT + 2, R_SPORT + 3), ports, "four flows, four ports");
                }
            }
        }
    }

    @Test
    void behindAnIdHopTheRankPicksThePort() {
        for (int out : new int[] {FORM_IPV4, FORM_IPV6}) {
            try (XafDataplane dp = gateway(FORM_ID, out, 4)) {
                for (int rank : new int[] {0, 1, 2, 3, 6, 65535}) {
                    assertEquals(R_SPORT + rank % 4, egressPort(dp, FORM_ID, out, 0, rank), "rank " + rank);
                }
            }
        }
    }

    @Test
    void spanOneAndZeroKeepTheRoutesPort() {
        for (int span : new int[] {1, 0}) {
            try (XafDataplane dp = gateway(FORM_IPV4, FORM_IPV6, span)) {
                for (int sport = 9450; sport <= 9453; sport++) {
                    assertEquals(R_SPORT, egressPort(dp, FORM_IPV4, FORM_IPV6, sport, RANK), "span " + span + ", from " + sport);
                }
            }
        }
    }

    @Test
    void theIdEgressFormIsUnchangedByASpan() {
        byte[] body = Xaf.of(9, NET, JOB, TOKEN, payload(99, 1)).bytes();
        for (int span : new int[] {1, 4}) {
            try (XafDataplane dp = gateway(FORM_IPV4, FORM_ID, span)) {
                ProgTestRun.Result r = ProgTestRun.run(dp.programFd(), ingress(FORM_IPV4, 9452, body), LO, 0);
                assertEquals(ProgTestRun.XDP_REDIRECT, r.action());
                org.junit.jupiter.api.Assertions.assertArrayEquals(expectedEgress(FORM_ID, Xaf.of(8, NET, JOB, TOKEN, payload(99, 1)).bytes()), r.frame());
            }
        }
    }
}
