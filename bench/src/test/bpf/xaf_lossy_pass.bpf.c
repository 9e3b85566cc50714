/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xaf_lossy_pass.bpf.c - test only: passes every frame but one XAF frame in DROP_ONE_IN, chosen at random.
 *
 * The all-reduce tests attach it in place of xdp_pass.bpf.o on the veth peers of the gateway ports, where every
 * frame a gateway forwards arrives, so the transport has to repair loss between data centers without the gateway
 * program carrying a fault-injection hook. Frames that are not XAF (ARP, neighbour discovery) always pass.
 * Fragment-aware (xdp.frags) like xdp_pass, for jumbo frames.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "xaf_shared.h"
#include "xaf_parse.h"

#define DROP_ONE_IN 50

SEC("xdp.frags")
int xaf_lossy_pass(struct xdp_md *ctx)
{
	struct cursor c = frame_cursor(ctx);
	struct udphdr *udp;

	if (!find_xaf_hdr(&c, &udp))
		return XDP_PASS;
	return bpf_get_prandom_u32() % DROP_ONE_IN == 0 ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
