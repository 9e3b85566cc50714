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
 * Layout (Katran style): the headers beside this file hold the parts, this file the decisions.
 *   xaf_shared.h   wire format and map keys/values, the one header shared with Java (SharedLayouts)
 *   xaf_maps.h     the maps
 *   xaf_parse.h    outer header lengths, the cursor, the parsers of each form and of the XAF header (the steps
 *                  shared with xsk_all.bpf.c and the benchmark's programs)
 *   xaf_csum.h     checksums summed inline
 *   xaf_rewrite.h  the egress form's outer headers written from a route
 * Below: the entry point, then its steps in the order of docs/PROTOCOL.md §7 (identify, validate, route, then
 * deliver locally or forward), then the single exit that records one outcome counter (plus RX_XAF for XAF frames).
 *
 * Cost per frame matters (a gateway CPU forwards millions of frames per second), so the forwarding path makes only
 * the helper calls it cannot avoid: the frame's length (bpf_xdp_get_buff_len: fragments included), two hash lookups
 * (port, route), one per-CPU counter lookup, the redirect, and bpf_xdp_adjust_head/tail only when the frame actually
 * changes size. The egress MTU comes from an ARRAY map, whose lookup the verifier inlines. Checksums are summed inline (no
 * bpf_csum_diff call) and multi-byte header fields are read with single loads.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xaf_shared.h"
#include "xaf_maps.h"
#include "xaf_parse.h"
#include "xaf_csum.h"
#include "xaf_rewrite.h"

/*
 * Run configuration for libxdp's multiprog dispatcher (xaf gateway --attach dispatcher), read from the
 * .xdp_run_config BTF section when the gateway shares an interface with other XDP programs; ignored by a plain
 * attach. Priority 20: after firewalls such as xdp-filter (10), so their drops apply to XAF traffic too, and before
 * programs at libxdp's default (50). Chain call on XDP_PASS only: frames that are not XAF traffic (the gateway passes
 * them) go on to the next program; a frame the gateway forwarded (XDP_REDIRECT) or dropped stops here.
 * The macro comes from xdp-tools' xdp/xdp_helpers.h (libxdp-dev); the fallback spells the same section so the
 * program also builds where libxdp-dev is not installed.
 */
#if __has_include(<xdp/xdp_helpers.h>)
#include <xdp/xdp_helpers.h>
#else
#define _CONCAT(x, y) x##y
#define XDP_RUN_CONFIG(f) _CONCAT(_, f) SEC(".xdp_run_config")
#endif
#define XAF_RUN_PRIO 20

struct {
	__uint(priority, XAF_RUN_PRIO);
	__uint(XDP_PASS, 1);
} XDP_RUN_CONFIG(xaf_gateway);

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

static __always_inline struct verdict verdict(__u32 action, __u32 counter)
{
	struct verdict v = { .action = action, .counter = counter };
	return v;
}

static __always_inline struct verdict drop(__u32 counter)
{
	return verdict(XDP_DROP, counter);
}

/* The entry point's steps, defined below it in the order a frame meets them. */
static __always_inline struct verdict process(struct xdp_md *ctx, __u32 frame_len, int *is_xaf, struct port_use *use);
static __always_inline struct verdict deliver_local(struct xdp_md *ctx, __u32 frame_len, const struct xaf_frame *f);
static __always_inline struct verdict forward(struct xdp_md *ctx, __u32 frame_len, const struct xaf_port *port,
					      const struct xaf_route *r, struct xaf_hdr *xaf, __be32 network_id,
					      const struct xaf_frame *f, struct port_use *use);
static __always_inline __be16 egress_src_port(const struct xaf_route *r, const struct xaf_hdr *xaf, const struct xaf_frame *f);
static __always_inline void count(int is_xaf, __u32 counter, __u64 bytes, const struct port_use *use);

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

/*
 * One frame, decided in the order of docs/PROTOCOL.md §7. frame_len is the whole frame (bpf_xdp_get_buff_len): with
 * fragments (xdp.frags, jumbo frames) data..data_end is only the first buffer. Every header the program reads or
 * writes must lie in that first buffer; the payload, which the program never touches, may continue in fragments.
 */
static __always_inline struct verdict process(struct xdp_md *ctx, __u32 frame_len, int *is_xaf, struct port_use *use)
{
	struct cursor c = frame_cursor(ctx);
	struct xaf_frame f = {};
	struct xaf_hdr *xaf;
	struct xaf_port *port;
	struct xaf_route *r;
	__u32 ifindex = ctx->ingress_ifindex;
	__be32 network_id;
	__u32 key;
	int rc;

	/* 1. Identify: only frames on a port, and of those only XAF frames, are the gateway's; the rest pass. */
	port = bpf_map_lookup_elem(&ports, &ifindex);
	if (!port)
		return verdict(XDP_PASS, XAF_C_PASS_NON_XAF);
	rc = parse_outer(&c, &f);
	if (rc == 0)
		return verdict(XDP_PASS, XAF_C_PASS_NON_XAF);
	*is_xaf = 1;
	use->rx_slot = port->slot;

	/* 2. Validate: the outer headers, the XAF header and the lengths they claim agree. */
	if (rc < 0)
		return drop(XAF_C_DROP_MALFORMED);
	xaf = parse_xaf_hdr(&c, &f, frame_len);
	if (!xaf)
		return drop(XAF_C_DROP_MALFORMED);

	/* 3. Route: the route of the network index identifier, the ingress port it allows, the job it serves. */
	network_id = word32((void *)xaf + 8);
	key = bpf_ntohl(network_id);
	r = bpf_map_lookup_elem(&routes, &key);
	if (!r)
		return drop(XAF_C_DROP_NO_ROUTE);
	if (r->ingress_mask && (port->slot >= 64 || !(r->ingress_mask & (1ULL << port->slot))))
		return drop(XAF_C_DROP_INGRESS);
	/* Hairpin (PROTOCOL.md §7): a frame never leaves by the port it arrived on unless the route lists that port in
	 * its ingress list. It would leave with the gateway's source address, past the receiver's source check. */
	if (r->action == XAF_ACT_FORWARD && !r->ingress_mask && r->tx_slot == port->slot)
		return drop(XAF_C_DROP_HAIRPIN);
	if (word32((void *)xaf + 12) != bpf_htonl(r->job_id) || word32((void *)xaf + 16) != bpf_htonl(r->job_token))
		return drop(XAF_C_DROP_BAD_TOKEN);
	if (r->action == XAF_ACT_LOCAL)
		return deliver_local(ctx, frame_len, &f);
	return forward(ctx, frame_len, port, r, xaf, network_id, &f, use);
}

/*
 * LOCAL (PROTOCOL.md §7) hands the frame over as it arrived (padding trimmed): the hop limit is neither checked nor
 * decremented, so no header byte and no checksum changes.
 */
static __always_inline struct verdict deliver_local(struct xdp_md *ctx, __u32 frame_len, const struct xaf_frame *f)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 l2_len = ETH_HLEN + f->l3_len;

	/* an AF_XDP socket takes single-buffer frames: one that continues in fragments would be lost after the
	 * redirect, uncounted */
	if (l2_len > (__u32)(data_end - data))
		return drop(XAF_C_DROP_TOO_BIG);
	if (frame_len > l2_len && bpf_xdp_adjust_tail(ctx, -(int)(frame_len - l2_len)))
		return drop(XAF_C_DROP_MALFORMED);
	if (bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_DROP) != XDP_REDIRECT)
		return drop(XAF_C_DROP_REDIRECT);
	return verdict(XDP_REDIRECT, XAF_C_TO_LOCAL);
}

/*
 * FORWARD (PROTOCOL.md §6 and §7): hop limit, egress form, egress port and its MTU, in that order;
 * then the frame is resized for the egress form, its outer headers rewritten and it is redirected to the egress port.
 */
static __always_inline struct verdict forward(struct xdp_md *ctx, __u32 frame_len, const struct xaf_port *port,
					      const struct xaf_route *r, struct xaf_hdr *xaf, __be32 network_id,
					      const struct xaf_frame *f, struct port_use *use)
{
	__u32 l2_len = ETH_HLEN + f->l3_len;
	__u32 out_len, tx_slot;
	__u32 *mtu;
	__be16 src_port;
	__u8 hop;

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

	if (r->action != XAF_ACT_FORWARD)
		return drop(XAF_C_DROP_BAD_FORM);

	out_len = outer_len_of(r->egress_form);
	if (!out_len)
		return drop(XAF_C_DROP_BAD_FORM);

	/* PROTOCOL.md §7: the rebuilt frame must fit the egress port. What follows its Ethernet header (the IP packet,
	 * or ID header + XAF header + payload) is compared with the port's MTU; the kernel would drop a larger frame
	 * after the redirect, where this program could no longer count it. It must also fit the egress form's 16-bit
	 * length fields, which a port MTU above 64 kB does not guarantee. */
	tx_slot = r->tx_slot;
	mtu = bpf_map_lookup_elem(&port_mtus, &tx_slot);
	if (!mtu || !*mtu)
		return drop(XAF_C_DROP_REDIRECT); /* no port at that slot */
	if (out_len - ETH_HLEN + f->xaf_len > *mtu || !fits_form_length(r->egress_form, f->xaf_len)) {
		use->tx_slot = tx_slot;
		return drop(XAF_C_DROP_TOO_BIG);
	}

	/* The egress flow, read from the headers while xaf still points at them: resizing the frame invalidates it. */
	src_port = egress_src_port(r, xaf, f);

	/* Trim trailing padding, then move the start of the frame so the new outer headers fit exactly. */
	if (frame_len > l2_len && bpf_xdp_adjust_tail(ctx, -(int)(frame_len - l2_len)))
		return drop(XAF_C_DROP_MALFORMED);
	if (f->outer_len != out_len && bpf_xdp_adjust_head(ctx, (int)f->outer_len - (int)out_len))
		return drop(XAF_C_DROP_REDIRECT);
	if (write_outer(ctx, r, f->xaf_len, network_id, src_port))
		return drop(XAF_C_DROP_MALFORMED);

	if (bpf_redirect_map(&tx_ports, r->tx_slot, XDP_DROP) != XDP_REDIRECT)
		return drop(XAF_C_DROP_REDIRECT);
	use->tx_slot = r->tx_slot;
	use->tx_len = out_len + f->xaf_len;
	return verdict(XDP_REDIRECT, XAF_C_FORWARDED);
}

/*
 * The UDP source port of an IP egress form (PROTOCOL.md §7, "The egress flow"): one of the route's src_port_span
 * consecutive ports from src_port, src_port + (src_rank + ingress UDP source port) % span, so that the flows a sender
 * keeps apart (by its source port, or by rank behind an ID-form hop) stay apart after the gateway and receiving NICs
 * (RSS) and WAN paths (ECMP) can spread them. Span 0 or 1: src_port. xaf was bounds-checked whole by parse_xaf_hdr.
 */
static __always_inline __be16 egress_src_port(const struct xaf_route *r, const struct xaf_hdr *xaf, const struct xaf_frame *f)
{
	__u32 span = r->src_port_span;
	__u32 flow;

	if (span <= 1)
		return r->src_port;
	flow = (__u32)bpf_ntohs(word16((const void *)xaf + 20)) + f->udp_source; /* src_rank + ingress source port */
	/* the control plane keeps src_port + span - 1 within 16 bits; a map written otherwise wraps, it cannot fault */
	return bpf_htons((__u16)(bpf_ntohs(r->src_port) + flow % span));
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

char _license[] SEC("license") = "Dual BSD/GPL";
