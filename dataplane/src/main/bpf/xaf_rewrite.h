/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xaf_rewrite.h - writing the outer headers of the egress form from a route (docs/PROTOCOL.md §7, FORWARD), after
 * bpf_xdp_adjust_head has made room for them: all offsets are constant. The XAF header and payload stay where they
 * are; only hop_limit has changed, before these run.
 */
#ifndef XAF_REWRITE_H
#define XAF_REWRITE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xaf_shared.h"
#include "xaf_parse.h"
#include "xaf_csum.h"

#define IP_DF          0x4000
#define EGRESS_TTL     64

/* Outer header length of the egress form; 0 for a form this program does not know. */
static __always_inline __u32 outer_len_of(__u8 form)
{
	switch (form) {
	case XAF_FORM_IPV4: return OUTER_IPV4;
	case XAF_FORM_IPV6: return OUTER_IPV6;
	case XAF_FORM_ID:   return OUTER_ID;
	default:            return 0;
	}
}

/*
 * Whether a frame of xaf_len bytes (XAF header + payload) fits the length fields of the egress form (PROTOCOL.md §7,
 * "Egress MTU"): the IPv4 total length (20 + 8 + xaf_len), the IPv6 payload length (8 + xaf_len) and the ID length
 * (xaf_len) are 16 bits. An ID frame of the largest payload fits neither IP form; a port MTU above 64 kB (lo, or a
 * value written into port_mtus) would not stop it.
 */
static __always_inline int fits_form_length(__u8 form, __u32 xaf_len)
{
	switch (form) {
	case XAF_FORM_IPV4: return IPV4_HDR_LEN + UDP_HDR_LEN + xaf_len <= 0xffff;
	case XAF_FORM_IPV6: return UDP_HDR_LEN + xaf_len <= 0xffff;
	default:            return xaf_len <= 0xffff;
	}
}

static __always_inline void write_eth(struct ethhdr *eth, const struct xaf_route *r, __u16 proto)
{
	__builtin_memcpy(eth->h_dest, r->dst_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, r->src_mac, ETH_ALEN);
	eth->h_proto = bpf_htons(proto);
}

static __always_inline int write_ipv4(struct xdp_md *ctx, const struct xaf_route *r, __u32 xaf_len, __be16 src_port)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *iph = (void *)(eth + 1);
	struct udphdr *udp = (void *)(iph + 1);
	struct xaf_hdr *xaf = (void *)(udp + 1);
	__u32 udp_len = UDP_HDR_LEN + xaf_len;
	__u64 sum, isum;

	/* bounds: Ethernet + IPv4 + UDP + the whole XAF header (read for the checksum) */
	if ((void *)(xaf + 1) > data_end)
		return -1;
	if (IPV4_HDR_LEN + udp_len > 0xffff)
		return -1;
	write_eth(eth, r, ETH_P_IP);
	iph->version = 4;
	iph->ihl = 5;
	iph->tos = 0;
	iph->tot_len = bpf_htons(IPV4_HDR_LEN + udp_len);
	iph->id = 0;
	iph->frag_off = bpf_htons(IP_DF);
	iph->ttl = EGRESS_TTL;
	iph->protocol = IPPROTO_UDP;
	iph->check = 0;
	__builtin_memcpy(&iph->saddr, r->src_ip, 4);
	__builtin_memcpy(&iph->daddr, r->dst_ip, 4);
	isum = (__u64)word32(iph) + word32((void *)iph + 4) + word32((void *)iph + 8) + iph->saddr + iph->daddr;
	iph->check = ~csum_fold(isum);

	udp->source = src_port;
	udp->dest = r->dst_port;
	udp->len = bpf_htons(udp_len);
	sum = (__u64)iph->saddr + iph->daddr + bpf_htons(IPPROTO_UDP) + udp->len;
	udp->check = udp_check(sum, udp, xaf);
	return 0;
}

static __always_inline int write_ipv6(struct xdp_md *ctx, const struct xaf_route *r, __u32 xaf_len, __be16 src_port)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6 = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip6 + 1);
	struct xaf_hdr *xaf = (void *)(udp + 1);
	__u32 udp_len = UDP_HDR_LEN + xaf_len;
	__u64 sum;

	/* bounds: Ethernet + IPv6 + UDP + the whole XAF header (read for the checksum) */
	if ((void *)(xaf + 1) > data_end)
		return -1;
	/* the IPv6 payload length and the UDP length are 16 bits: a longer datagram would leave with both truncated
	 * (forward() already drops it as too big; this keeps the writer safe on its own, as write_ipv4 is) */
	if (udp_len > 0xffff)
		return -1;
	write_eth(eth, r, ETH_P_IPV6);
	*(__be32 *)ip6 = bpf_htonl(0x60000000); /* version 6, traffic class 0, flow label 0 */
	ip6->payload_len = bpf_htons(udp_len);
	ip6->nexthdr = IPPROTO_UDP;
	ip6->hop_limit = EGRESS_TTL;
	__builtin_memcpy(&ip6->saddr, r->src_ip, 16);
	__builtin_memcpy(&ip6->daddr, r->dst_ip, 16);

	udp->source = src_port;
	udp->dest = r->dst_port;
	udp->len = bpf_htons(udp_len);
	sum = sum16bytes(r->src_ip) + sum16bytes(r->dst_ip) + bpf_htons(IPPROTO_UDP) + udp->len;
	udp->check = udp_check(sum, udp, xaf);
	return 0;
}

static __always_inline int write_id(struct xdp_md *ctx, const struct xaf_route *r, __u32 xaf_len,
				    __be32 network_id)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct xaf_id_hdr *id = (void *)(eth + 1);

	/* bounds: Ethernet + ID header */
	if ((void *)(id + 1) > data_end)
		return -1;
	write_eth(eth, r, XAF_ETH_P_ID);
	id->src_id = bpf_htonl(r->src_id);
	id->dst_id = network_id;
	id->next_hdr = XAF_ID_NEXT_XAF;
	id->reserved = 0;
	id->length = bpf_htons(xaf_len);
	return 0;
}

/*
 * The outer headers of r->egress_form, from the frame's start: 0, or -1 when they do not fit the first buffer. src_port
 * is the UDP source port of the IP forms (network order); the ID form has none.
 */
static __always_inline int write_outer(struct xdp_md *ctx, const struct xaf_route *r, __u32 xaf_len, __be32 network_id,
				       __be16 src_port)
{
	switch (r->egress_form) {
	case XAF_FORM_IPV4:
		return write_ipv4(ctx, r, xaf_len, src_port);
	case XAF_FORM_IPV6:
		return write_ipv6(ctx, r, xaf_len, src_port);
	default:
		return write_id(ctx, r, xaf_len, network_id);
	}
}

#endif /* XAF_REWRITE_H */
