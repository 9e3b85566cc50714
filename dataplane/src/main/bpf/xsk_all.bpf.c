/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xsk_all.bpf.c - hands every XAF-looking frame to the AF_XDP socket of its RX queue and nothing else.
 *
 * Used by the AF_XDP user-space gateway (testbed mode "afxdp"): the forwarding decision is made in user space, so
 * this program does not parse the XAF header, check routes or touch the hop limit. A frame is taken when it is
 * EtherType 0x0812 (identifier-native form) or IPv4/IPv6 UDP to port 9450 (IPv4 non-first fragments excluded);
 * everything else (ARP, neighbour discovery, ordinary IP traffic) passes to the kernel. A taken frame whose queue
 * has no socket is dropped and counted rather than given to the kernel, which would only answer it with ICMP.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xaf_shared.h"
#include "xaf_parse.h"

enum xsk_all_counter {
	XSK_ALL_REDIRECTED = 0, /* handed to the queue's AF_XDP socket */
	XSK_ALL_PASSED,         /* not XAF: passed to the kernel */
	XSK_ALL_NO_SOCKET,      /* XAF, but no socket registered for the queue: dropped */
	XSK_ALL__MAX,
};

/* key: RX queue index -> AF_XDP socket fd (written by user space) */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, XAF_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XSK_ALL__MAX);
	__type(key, __u32);
	__type(value, __u64);
} xsk_all_counters SEC(".maps");

static __always_inline void count(__u32 key)
{
	__u64 *v = bpf_map_lookup_elem(&xsk_all_counters, &key);
	if (v)
		*v += 1;
}

/*
 * True for frames the gateway must see: the ID form, or UDP to the XAF port over IPv4/IPv6 with the whole UDP header
 * in the frame. Looser than the XDP gateway's parse_outer, on purpose: the user-space gateway validates what it gets,
 * so any frame of the ID EtherType is taken (its next header is not checked) and the IP version nibble is not checked.
 */
static __always_inline int carries_xaf(struct cursor *c)
{
	struct ethhdr *eth;
	struct udphdr *udp;
	int proto = parse_ethhdr(c, &eth);

	if (proto == bpf_htons(XAF_ETH_P_ID))
		return 1;
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = c->pos;

		if (!ipv4_udp(c, &udp) || !ipv4_first_fragment(ip))
			return 0;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		if (!ipv6_udp(c, &udp))
			return 0;
	} else {
		return 0;
	}
	/* bounds: the whole UDP header, one check where the gateway's xaf_udp_header makes two */
	if ((void *)(udp + 1) > c->end)
		return 0;
	return udp->dest == bpf_htons(XAF_UDP_PORT);
}

SEC("xdp")
int xsk_all(struct xdp_md *ctx)
{
	struct cursor c = frame_cursor(ctx);

	if (!carries_xaf(&c)) {
		count(XSK_ALL_PASSED);
		return XDP_PASS;
	}
	if (bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_DROP) != XDP_REDIRECT) {
		count(XSK_ALL_NO_SOCKET);
		return XDP_DROP;
	}
	count(XSK_ALL_REDIRECTED);
	return XDP_REDIRECT;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
