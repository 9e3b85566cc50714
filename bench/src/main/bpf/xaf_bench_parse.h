/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xaf_bench_parse.h - finds the XAF header in a frame of any form, for the benchmark's traffic generator and sink.
 * Returns the XAF header or NULL; *udp is set to the UDP header for IP forms (NULL for the ID form).
 */
#ifndef XAF_BENCH_PARSE_H
#define XAF_BENCH_PARSE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xaf_shared.h"

static __always_inline struct xaf_hdr *bench_find_xaf(void *data, void *data_end, struct udphdr **udp)
{
	struct ethhdr *eth = data;
	void *l3 = eth + 1;
	*udp = NULL;
	if (l3 > data_end) /* Ethernet header must fit */
		return NULL;
	if (eth->h_proto == bpf_htons(XAF_ETH_P_ID)) {
		struct xaf_id_hdr *id = l3;
		struct xaf_hdr *x = (void *)(id + 1);
		if ((void *)(x + 1) > data_end) /* ID + XAF headers must fit */
			return NULL;
		return x->magic == bpf_htons(XAF_MAGIC) ? x : NULL;
	}
	struct udphdr *u;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = l3;
		if ((void *)(ip + 1) > data_end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
			return NULL;
		u = (void *)(ip + 1);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = l3;
		if ((void *)(ip6 + 1) > data_end || ip6->nexthdr != IPPROTO_UDP)
			return NULL;
		u = (void *)(ip6 + 1);
	} else {
		return NULL;
	}
	struct xaf_hdr *x = (void *)(u + 1);
	if ((void *)(x + 1) > data_end || u->dest != bpf_htons(XAF_UDP_PORT) || x->magic != bpf_htons(XAF_MAGIC))
		return NULL;
	*udp = u;
	return x;
}

#endif
