/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xaf_gateway.bpf.c - the XAForward XDP gateway.
 *
 * A gateway port receives XAF frames in one network form (IPv4/UDP, IPv6/UDP or the identifier-native ID form),
 * looks the 32-bit network index identifier up in `routes`, checks the job token, decrements the hop limit and
 * either rebuilds the outer headers for the egress form and redirects the frame to another port (FORWARD) or hands
 * it to a local AF_XDP socket (LOCAL). The payload is never read or copied: the UDP checksum of the rebuilt frame is
 * assembled from the pseudo-header, the UDP header, the 48 XAF header bytes and the payload_sum the sender put into
 * the XAF header.
 *
 * Layout of this file (Katran style): constants, maps, cursor + parse helpers, checksum helpers, header writers,
 * the program. Every frame ends at a single exit that records one outcome counter (plus RX_XAF for XAF frames).
 *
 * Cost per frame matters (a gateway CPU forwards millions of frames per second), so the forwarding path makes only
 * the helper calls it cannot avoid: the frame's length (bpf_xdp_get_buff_len: fragments included), two hash lookups
 * (port, route), one per-CPU counter lookup, the redirect, and bpf_xdp_adjust_head/tail only when the frame actually
 * changes size. The egress MTU comes from an ARRAY map, whose lookup the verifier inlines. Checksums are summed inline (no
 * bpf_csum_diff call) and multi-byte header fields are read with single loads.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xaf_shared.h"

/* ---- Constants ----------------------------------------------------------------------------- */

#define IPV4_HDR_LEN   20
#define IPV6_HDR_LEN   40
#define UDP_HDR_LEN    8
#define IP_DF          0x4000
#define IP_MF          0x2000
#define IP_OFFSET_MASK 0x1FFF
#define EGRESS_TTL     64

/* Outer header length (everything before the XAF header) of each form. */
#define OUTER_IPV4 (ETH_HLEN + IPV4_HDR_LEN + UDP_HDR_LEN) /* 42 */
#define OUTER_IPV6 (ETH_HLEN + IPV6_HDR_LEN + UDP_HDR_LEN) /* 62 */
#define OUTER_ID   (ETH_HLEN + XAF_ID_HDR_LEN)             /* 26 */
#define OUTER_MAX  OUTER_IPV6

/* ---- Maps ---------------------------------------------------------------------------------- */

/* network index identifier (host order) -> what to do with frames that carry it */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XAF_MAX_ROUTES);
	__type(key, __u32);
	__type(value, struct xaf_route);
} routes SEC(".maps");

/* ingress ifindex -> gateway port (slot and form); frames on other interfaces pass */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XAF_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct xaf_port);
} ports SEC(".maps");

/* route tx_slot -> egress ifindex */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, XAF_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} tx_ports SEC(".maps");

/* rx queue index -> local AF_XDP socket */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, XAF_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

/* port slot -> the port's MTU (bytes after the Ethernet header); 0 = no port. An ARRAY: the lookup is inlined */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XAF_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} port_mtus SEC(".maps");

/* key 0 -> packets and bytes per enum xaf_counter, per CPU */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xaf_counters);
} counters SEC(".maps");

/* ---- Parsing ------------------------------------------------------------------------------- */

/* Cursor over the frame: where the next header starts. */
struct cursor {
	void *pos;
	void *end;
};

/* What parsing learnt about an XAF frame. */
struct xaf_frame {
	__u32 outer_len;   /* bytes before the XAF header: OUTER_IPV4, OUTER_IPV6 or OUTER_ID */
	__u32 l3_len;      /* bytes from the end of Ethernet to the end of the payload, as the headers claim */
	__u32 xaf_len;     /* XAF header + payload as the UDP/ID length field claims */
	__u16 udp_check;   /* ingress UDP checksum (raw), 0 when none/ID form */
	__u8  form;        /* enum xaf_form */
};

/* Outcome of one frame, recorded at the single exit. */
struct verdict {
	__u32 action;
	__u32 counter;
};

/*
 * Where a frame was counted per port: ingress slot (XAF frames on a port) and the egress slot once a route chose
 * one: with the egress length when forwarded, or as too big for that port.
 */
struct port_use {
	__u32 rx_slot;     /* XAF_MAX_PORTS: none */
	__u32 tx_slot;     /* XAF_MAX_PORTS: none */
	__u32 tx_len;
};

static __always_inline int parse_ethhdr(struct cursor *c, struct ethhdr **eth)
{
	struct ethhdr *h = c->pos;

	/* bounds: the whole 14-byte Ethernet header must be in the frame */
	if ((void *)(h + 1) > c->end)
		return -1;
	c->pos = h + 1;
	*eth = h;
	return h->h_proto; /* network order */
}

/* Returns 1 for an XAF-over-UDP/IPv4 frame, 0 for anything else, -1 for an XAF frame that is malformed. */
static __always_inline int parse_ipv4(struct cursor *c, struct xaf_frame *f)
{
	struct iphdr *iph = c->pos;
	struct udphdr *udp;
	__u32 ihl_bytes;

	/* bounds: the fixed 20-byte IPv4 header */
	if ((void *)(iph + 1) > c->end)
		return 0;
	if (iph->version != 4 || iph->protocol != IPPROTO_UDP)
		return 0;
	/* a non-first fragment has no UDP header: it cannot be recognised, leave it to the kernel */
	if (bpf_ntohs(iph->frag_off) & IP_OFFSET_MASK)
		return 0;
	ihl_bytes = iph->ihl * 4;
	if (ihl_bytes < IPV4_HDR_LEN)
		return 0;
	udp = (void *)iph + ihl_bytes; /* ihl is 4 bits: at most 60 bytes, the verifier knows the range */
	/* bounds: the identifying field, the UDP destination port (the first 4 bytes of the UDP header) */
	if ((void *)udp + 4 > c->end)
		return 0;
	if (udp->dest != bpf_htons(XAF_UDP_PORT))
		return 0;
	/* bounds: the rest of the UDP header; an identified frame that ends inside it is truncated XAF */
	if ((void *)(udp + 1) > c->end)
		return -1;
	/* From here on it is XAF traffic: anything unexpected is a malformed XAF frame. */
	if (ihl_bytes != IPV4_HDR_LEN || (bpf_ntohs(iph->frag_off) & IP_MF))
		return -1;
	f->outer_len = OUTER_IPV4;
	f->l3_len = bpf_ntohs(iph->tot_len);
	f->xaf_len = bpf_ntohs(udp->len);
	if (f->xaf_len < UDP_HDR_LEN || f->l3_len != IPV4_HDR_LEN + f->xaf_len)
		return -1;
	f->xaf_len -= UDP_HDR_LEN;
	f->udp_check = udp->check;
	f->form = XAF_FORM_IPV4;
	c->pos = udp + 1;
	return 1;
}

static __always_inline int parse_ipv6(struct cursor *c, struct xaf_frame *f)
{
	struct ipv6hdr *ip6 = c->pos;
	struct udphdr *udp;

	/* bounds: the fixed 40-byte IPv6 header */
	if ((void *)(ip6 + 1) > c->end)
		return 0;
	/* XAF is carried directly in UDP: no extension headers */
	if (ip6->version != 6 || ip6->nexthdr != IPPROTO_UDP)
		return 0;
	udp = (void *)(ip6 + 1);
	/* bounds: the identifying field, the UDP destination port */
	if ((void *)udp + 4 > c->end)
		return 0;
	if (udp->dest != bpf_htons(XAF_UDP_PORT))
		return 0;
	/* bounds: the rest of the UDP header; an identified frame that ends inside it is truncated XAF */
	if ((void *)(udp + 1) > c->end)
		return -1;
	f->outer_len = OUTER_IPV6;
	f->l3_len = IPV6_HDR_LEN + bpf_ntohs(ip6->payload_len);
	f->xaf_len = bpf_ntohs(udp->len);
	if (f->xaf_len < UDP_HDR_LEN || bpf_ntohs(ip6->payload_len) != f->xaf_len)
		return -1;
	f->xaf_len -= UDP_HDR_LEN;
	f->udp_check = udp->check;
	f->form = XAF_FORM_IPV6;
	c->pos = udp + 1;
	return 1;
}

static __always_inline int parse_id(struct cursor *c, struct xaf_frame *f)
{
	struct xaf_id_hdr *id = c->pos;

	/* bounds: up to the identifying field, next_hdr (byte 8 of the ID header) */
	if ((void *)id + 9 > c->end)
		return 0;
	if (id->next_hdr != XAF_ID_NEXT_XAF)
		return 0;
	/* bounds: the rest of the 12-byte ID header; an identified frame that ends inside it is truncated XAF */
	if ((void *)(id + 1) > c->end)
		return -1;
	f->outer_len = OUTER_ID;
	f->xaf_len = bpf_ntohs(id->length);
	f->l3_len = XAF_ID_HDR_LEN + f->xaf_len;
	f->udp_check = 0;
	f->form = XAF_FORM_ID;
	c->pos = id + 1;
	return 1;
}

/* ---- Checksums ----------------------------------------------------------------------------- */

static __always_inline __u16 csum_fold(__u64 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

/* Sum of 16 bytes read as four 32-bit words (memory order: the result is stored back as-is). */
static __always_inline __u64 sum16bytes(const __u8 *p)
{
	const __u32 *w = (const __u32 *)p;

	return (__u64)w[0] + w[1] + w[2] + w[3];
}

/*
 * A 32-bit word of a packed header read with one load. The headers sit at 2-byte-aligned offsets; x86 (and the
 * verifier there) accepts unaligned packet loads, where the packed struct's field would cost four byte loads.
 */
static __always_inline __u32 word32(const void *p)
{
	return *(const __u32 *)p;
}

static __always_inline __u16 word16(const void *p)
{
	return *(const __u16 *)p;
}

/* Sum of the 48-byte XAF header as twelve 32-bit words (memory order), inline instead of bpf_csum_diff. */
static __always_inline __u64 sum_xaf_hdr(const struct xaf_hdr *xaf)
{
	const __u32 *w = (const __u32 *)xaf;

	return (__u64)w[0] + w[1] + w[2] + w[3] + w[4] + w[5] + w[6] + w[7] + w[8] + w[9] + w[10] + w[11];
}

/* ---- Header writers (after bpf_xdp_adjust_head; all offsets constant) ---------------------- */

static __always_inline void write_eth(struct ethhdr *eth, const struct xaf_route *r, __u16 proto)
{
	__builtin_memcpy(eth->h_dest, r->dst_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, r->src_mac, ETH_ALEN);
	eth->h_proto = bpf_htons(proto);
}

/* UDP checksum over pseudo-header sum + UDP header + XAF header + payload_sum; never touches the payload. */
static __always_inline __u16 udp_check(__u64 pseudo, struct udphdr *udp, struct xaf_hdr *xaf)
{
	__u64 sum = pseudo;
	__u16 check;

	sum += (__u64)udp->source + udp->dest + udp->len; /* check field counted as 0 */
	sum += sum_xaf_hdr(xaf);
	sum += word16((const void *)xaf + 42); /* payload_sum */
	check = ~csum_fold(sum);
	return check ? check : 0xffff; /* 0 means "no checksum": transmit all ones instead */
}

static __always_inline int write_ipv4(struct xdp_md *ctx, const struct xaf_route *r, __u32 xaf_len)
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

	udp->source = r->src_port;
	udp->dest = r->dst_port;
	udp->len = bpf_htons(udp_len);
	sum = (__u64)iph->saddr + iph->daddr + bpf_htons(IPPROTO_UDP) + udp->len;
	udp->check = udp_check(sum, udp, xaf);
	return 0;
}

static __always_inline int write_ipv6(struct xdp_md *ctx, const struct xaf_route *r, __u32 xaf_len)
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
	write_eth(eth, r, ETH_P_IPV6);
	*(__be32 *)ip6 = bpf_htonl(0x60000000); /* version 6, traffic class 0, flow label 0 */
	ip6->payload_len = bpf_htons(udp_len);
	ip6->nexthdr = IPPROTO_UDP;
	ip6->hop_limit = EGRESS_TTL;
	__builtin_memcpy(&ip6->saddr, r->src_ip, 16);
	__builtin_memcpy(&ip6->daddr, r->dst_ip, 16);

	udp->source = r->src_port;
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

static __always_inline __u32 outer_len_of(__u8 form)
{
	switch (form) {
	case XAF_FORM_IPV4: return OUTER_IPV4;
	case XAF_FORM_IPV6: return OUTER_IPV6;
	case XAF_FORM_ID:   return OUTER_ID;
	default:            return 0;
	}
}

/* ---- The program --------------------------------------------------------------------------- */

static __always_inline struct verdict drop(__u32 counter)
{
	struct verdict v = { .action = XDP_DROP, .counter = counter };
	return v;
}

/*
 * frame_len is the whole frame (bpf_xdp_get_buff_len): with fragments (xdp.frags, jumbo frames) data..data_end is
 * only the first buffer. Every header the program reads or writes must lie in that first buffer; the payload, which
 * the program never touches, may continue in fragments.
 */
static __always_inline struct verdict process(struct xdp_md *ctx, __u32 frame_len, int *is_xaf, struct port_use *use)
{
	struct verdict pass = { .action = XDP_PASS, .counter = XAF_C_PASS_NON_XAF };
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct cursor c = { .pos = data, .end = data_end };
	struct xaf_frame f = {};
	struct ethhdr *eth;
	struct xaf_hdr *xaf;
	struct xaf_port *port;
	struct xaf_route *r;
	__u32 ifindex = ctx->ingress_ifindex;
	__u32 l2_len, key, out_len, tx_slot;
	__u32 *mtu;
	__be32 network_id;
	__u16 payload_len;
	__u8 hop;
	int proto, rc;
	long ret;

	port = bpf_map_lookup_elem(&ports, &ifindex);
	if (!port)
		return pass;

	proto = parse_ethhdr(&c, &eth);
	if (proto == bpf_htons(ETH_P_IP))
		rc = parse_ipv4(&c, &f);
	else if (proto == bpf_htons(ETH_P_IPV6))
		rc = parse_ipv6(&c, &f);
	else if (proto == bpf_htons(XAF_ETH_P_ID))
		rc = parse_id(&c, &f);
	else
		rc = 0;
	if (rc == 0)
		return pass;
	*is_xaf = 1;
	use->rx_slot = port->slot;
	if (rc < 0)
		return drop(XAF_C_DROP_MALFORMED);

	xaf = c.pos;
	/* bounds: the whole 48-byte XAF header */
	if ((void *)(xaf + 1) > data_end)
		return drop(XAF_C_DROP_MALFORMED);
	/* magic (2 bytes) + version (1) in one load; type, the fourth byte, is masked out */
	if ((word32(xaf) & bpf_htonl(0xFFFFFF00)) != bpf_htonl((XAF_MAGIC << 16) | (XAF_VERSION << 8)) ||
	    xaf->hdr_len != XAF_HDR_LEN)
		return drop(XAF_C_DROP_MALFORMED);
	payload_len = bpf_ntohs(word16((void *)xaf + 40));
	if (f.xaf_len != XAF_HDR_LEN + (__u32)payload_len)
		return drop(XAF_C_DROP_MALFORMED);

	/* The frame must hold everything the headers claim; bytes beyond that are padding to trim. */
	l2_len = ETH_HLEN + f.l3_len;
	if (frame_len < l2_len)
		return drop(XAF_C_DROP_MALFORMED);

	network_id = word32((void *)xaf + 8);
	key = bpf_ntohl(network_id);
	r = bpf_map_lookup_elem(&routes, &key);
	if (!r)
		return drop(XAF_C_DROP_NO_ROUTE);
	if (r->ingress_mask && (port->slot >= 64 || !(r->ingress_mask & (1ULL << port->slot))))
		return drop(XAF_C_DROP_INGRESS);
	if (word32((void *)xaf + 12) != bpf_htonl(r->job_id) || word32((void *)xaf + 16) != bpf_htonl(r->job_token))
		return drop(XAF_C_DROP_BAD_TOKEN);
	/* PROTOCOL.md §7: LOCAL hands the frame over as it arrived (padding trimmed): the hop limit is neither
	 * checked nor decremented and fault injection does not apply, so no checksum changes either. */
	if (r->action == XAF_ACT_LOCAL) {
		/* an AF_XDP socket takes single-buffer frames: one that continues in fragments would be lost after
		 * the redirect, uncounted */
		if (l2_len > (__u32)(data_end - data))
			return drop(XAF_C_DROP_TOO_BIG);
		if (frame_len > l2_len && bpf_xdp_adjust_tail(ctx, -(int)(frame_len - l2_len)))
			return drop(XAF_C_DROP_MALFORMED);
		ret = bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_DROP);
		if (ret != XDP_REDIRECT)
			return drop(XAF_C_DROP_REDIRECT);
		struct verdict v = { .action = XDP_REDIRECT, .counter = XAF_C_TO_LOCAL };
		return v;
	}

	/* PROTOCOL.md §6: a hop limit above the ingress port's cap is clamped to it, so a frame sent (or forged) with
	 * 255 cannot circle a loop between gateways for 254 hops. hop_limit is outside every seal: rewriting it is
	 * what gateways do anyway. */
	hop = xaf->hop_limit;
	if (port->max_hop && hop > port->max_hop)
		hop = port->max_hop;
	if (hop <= 1)
		return drop(XAF_C_DROP_HOP_LIMIT);

	/* The outer headers are rebuilt with fresh checksums below, so the decrement needs no checksum patch. */
	xaf->hop_limit = hop - 1;

	if (r->drop_one_in && bpf_get_prandom_u32() % r->drop_one_in == 0)
		return drop(XAF_C_DROP_INJECTED);
	if (r->action != XAF_ACT_FORWARD)
		return drop(XAF_C_DROP_BAD_FORM);

	out_len = outer_len_of(r->egress_form);
	if (!out_len)
		return drop(XAF_C_DROP_BAD_FORM);

	/* PROTOCOL.md §7: the rebuilt frame must fit the egress port. What follows its Ethernet header (the IP packet,
	 * or ID header + XAF header + payload) is compared with the port's MTU; the kernel would drop a larger frame
	 * after the redirect, where this program could no longer count it. */
	tx_slot = r->tx_slot;
	mtu = bpf_map_lookup_elem(&port_mtus, &tx_slot);
	if (!mtu || !*mtu)
		return drop(XAF_C_DROP_REDIRECT); /* no port at that slot */
	if (out_len - ETH_HLEN + f.xaf_len > *mtu) {
		use->tx_slot = tx_slot;
		return drop(XAF_C_DROP_TOO_BIG);
	}

	/* Trim trailing padding, then move the start of the frame so the new outer headers fit exactly. */
	if (frame_len > l2_len && bpf_xdp_adjust_tail(ctx, -(int)(frame_len - l2_len)))
		return drop(XAF_C_DROP_MALFORMED);
	if (f.outer_len != out_len && bpf_xdp_adjust_head(ctx, (int)f.outer_len - (int)out_len))
		return drop(XAF_C_DROP_REDIRECT);

	switch (r->egress_form) {
	case XAF_FORM_IPV4:
		rc = write_ipv4(ctx, r, f.xaf_len);
		break;
	case XAF_FORM_IPV6:
		rc = write_ipv6(ctx, r, f.xaf_len);
		break;
	default:
		rc = write_id(ctx, r, f.xaf_len, network_id);
		break;
	}
	if (rc)
		return drop(XAF_C_DROP_MALFORMED);

	ret = bpf_redirect_map(&tx_ports, r->tx_slot, XDP_DROP);
	if (ret != XDP_REDIRECT)
		return drop(XAF_C_DROP_REDIRECT);
	use->tx_slot = r->tx_slot;
	use->tx_len = out_len + f.xaf_len;
	struct verdict v = { .action = XDP_REDIRECT, .counter = XAF_C_FORWARDED };
	return v;
}

/* One lookup for all counters of this CPU, per port included; per-CPU values need no atomics. */
static __always_inline void count(int is_xaf, __u32 counter, __u64 bytes, const struct port_use *use)
{
	__u32 zero = 0;
	struct xaf_counters *c = bpf_map_lookup_elem(&counters, &zero);
	__u64 tx;

	if (!c)
		return;
	if (is_xaf) {
		c->packets[XAF_C_RX_XAF] += 1;
		c->bytes[XAF_C_RX_XAF] += bytes;
	}
	if (counter < XAF_COUNTERS) { /* bounds for the verifier: counter is always an enum xaf_counter */
		c->packets[counter] += 1;
		c->bytes[counter] += bytes;
	}
	/* bounds for the verifier: slots are below XAF_MAX_PORTS (checked by the control plane), "none" is not */
	if (use->rx_slot < XAF_MAX_PORTS) {
		c->port_rx_packets[use->rx_slot] += 1;
		c->port_rx_bytes[use->rx_slot] += bytes;
	}
	/* 64-bit: the bound checked is the index used (a 32-bit copy would be zero-extended apart from its check) */
	tx = use->tx_slot;
	if (tx < XAF_MAX_PORTS) {
		if (counter == XAF_C_FORWARDED) {
			c->port_tx_packets[tx] += 1;
			c->port_tx_bytes[tx] += use->tx_len;
		} else {
			c->port_tx_too_big[tx] += 1;
		}
	}
}

/* xdp.frags: frames larger than one buffer (jumbo frames) reach the program; see process() for what that asks of it */
SEC("xdp.frags")
int xaf_gateway(struct xdp_md *ctx)
{
	__u32 bytes = bpf_xdp_get_buff_len(ctx); /* ingress frame length, fragments included, before any rewrite */
	int is_xaf = 0;
	struct port_use use = { .rx_slot = XAF_MAX_PORTS, .tx_slot = XAF_MAX_PORTS, .tx_len = 0 };
	struct verdict v = process(ctx, bytes, &is_xaf, &use);

	/* the single exit: every frame is counted once by outcome, XAF frames also as RX_XAF and on their port */
	count(is_xaf, v.counter, bytes, &use);
	return v.action;
}

char _license[] SEC("license") = "Dual BSD/GPL";
