/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xaf_parse.h - reading a frame, for every XDP program of the repository: the outer header lengths of each form, a
 * cursor over the frame, the steps that find the UDP header behind IPv4 and IPv6, and on top of them
 *   - the gateway's parsers, which identify an XAF frame in each form and validate it (docs/PROTOCOL.md §7,
 *     "Identify" and "Validate"): parse_outer, then parse_xaf_hdr;
 *   - find_xaf_hdr, which only finds the XAF header of a frame the benchmark or a test built or a gateway forwarded
 *     (bench/src/main/bpf, bench/src/test/bpf);
 *   - what xsk_all.bpf.c takes for the AF_XDP gateway is composed from the steps in that file.
 * The programs do not all accept the same frames (each function says what it checks), so the shared steps check
 * only what every caller checks, and each caller adds its own rules. Every read is preceded by its own bounds check
 * against the cursor's end: the verifier rejects a packet read it cannot prove in bounds. Parsers only read.
 */
#ifndef XAF_PARSE_H
#define XAF_PARSE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xaf_shared.h"

#define IPV4_HDR_LEN   20
#define IPV6_HDR_LEN   40
#define UDP_HDR_LEN    8
#define IP_MF          0x2000
#define IP_OFFSET_MASK 0x1FFF

/* Outer header length (everything before the XAF header) of each form. */
#define OUTER_IPV4 (ETH_HLEN + IPV4_HDR_LEN + UDP_HDR_LEN) /* 42 */
#define OUTER_IPV6 (ETH_HLEN + IPV6_HDR_LEN + UDP_HDR_LEN) /* 62 */
#define OUTER_ID   (ETH_HLEN + XAF_ID_HDR_LEN)             /* 26 */
#define OUTER_MAX  OUTER_IPV6

/* Cursor over the frame: where the next header starts. */
struct cursor {
	void *pos;
	void *end;
};

/* A cursor at the start of the frame's first buffer (with xdp.frags, data..data_end is only that buffer). */
static __always_inline struct cursor frame_cursor(const struct xdp_md *ctx)
{
	struct cursor c = { .pos = (void *)(long)ctx->data, .end = (void *)(long)ctx->data_end };
	return c;
}

/* What parsing learnt about an XAF frame. */
struct xaf_frame {
	__u32 outer_len;   /* bytes before the XAF header: OUTER_IPV4, OUTER_IPV6 or OUTER_ID */
	__u32 l3_len;      /* bytes from the end of Ethernet to the end of the payload, as the headers claim */
	__u32 xaf_len;     /* XAF header + payload as the UDP/ID length field claims */
	__u16 udp_check;   /* ingress UDP checksum (raw), 0 when none/ID form */
	__u16 udp_source;  /* ingress UDP source port (host order), 0 in the ID form: the flow the sender chose */
	__u8  form;        /* enum xaf_form */
};

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

/* ---- Steps every program shares --------------------------------------------------------- */

/* The EtherType (network order) of the Ethernet header at c->pos, moving past it; -1 (no EtherType) when it is cut. */
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

/*
 * Whether the IPv4 header at c->pos carries UDP: 1 with *udp set to the UDP header behind it, past any options
 * (IHL), or 0 when the fixed 20-byte header does not fit the frame, the protocol is not UDP or the IHL is below 5.
 * *udp is not yet bounds-checked: the caller checks as much of it as it reads. The version nibble and fragmentation
 * are left to the caller (the programs differ there). A status rather than a NULL pointer: clang cannot prove the
 * computed pointer non-null and would test it again.
 */
static __always_inline int ipv4_udp(struct cursor *c, struct udphdr **udp)
{
	struct iphdr *iph = c->pos;

	/* bounds: the fixed 20-byte IPv4 header */
	if ((void *)(iph + 1) > c->end)
		return 0;
	if (iph->protocol != IPPROTO_UDP || iph->ihl < 5)
		return 0;
	*udp = (void *)iph + iph->ihl * 4; /* ihl is 4 bits: at most 60 bytes, the verifier knows the range */
	return 1;
}

/* False for a non-first IPv4 fragment, which carries no UDP header. iph must have been bounds-checked (ipv4_udp). */
static __always_inline int ipv4_first_fragment(const struct iphdr *iph)
{
	return !(bpf_ntohs(iph->frag_off) & IP_OFFSET_MASK);
}

/*
 * As ipv4_udp, for the IPv6 header at c->pos: 0 when the 40-byte header does not fit the frame or its next header
 * is not UDP (XAF is carried directly in UDP: extension headers are not followed). The version nibble is left to
 * the caller.
 */
static __always_inline int ipv6_udp(struct cursor *c, struct udphdr **udp)
{
	struct ipv6hdr *ip6 = c->pos;

	/* bounds: the fixed 40-byte IPv6 header */
	if ((void *)(ip6 + 1) > c->end)
		return 0;
	if (ip6->nexthdr != IPPROTO_UDP)
		return 0;
	*udp = (void *)(ip6 + 1);
	return 1;
}

/*
 * The UDP header behind an IPv4 or IPv6 header that carries UDP: 0 when it is not to the XAF port (not XAF), -1 when
 * it is but the frame ends inside it (truncated XAF), 1 when the whole header is in the frame.
 */
static __always_inline int xaf_udp_header(struct cursor *c, struct udphdr *udp)
{
	/* bounds: the identifying field, the UDP destination port (the first 4 bytes of the UDP header) */
	if ((void *)udp + 4 > c->end)
		return 0;
	if (udp->dest != bpf_htons(XAF_UDP_PORT))
		return 0;
	/* bounds: the rest of the UDP header; an identified frame that ends inside it is truncated XAF */
	if ((void *)(udp + 1) > c->end)
		return -1;
	return 1;
}

/* ---- The gateway: Identify and Validate (PROTOCOL.md §7) -------------------------------- */

/* Completes f for XAF over UDP, whose lengths were checked (f->xaf_len still counts the UDP header): returns 1. */
static __always_inline int xaf_over_udp(struct cursor *c, struct xaf_frame *f, struct udphdr *udp, __u8 form)
{
	f->xaf_len -= UDP_HDR_LEN;
	f->udp_check = udp->check;
	f->udp_source = bpf_ntohs(udp->source);
	f->form = form;
	c->pos = udp + 1;
	return 1;
}

/* Returns 1 for an XAF-over-UDP/IPv4 frame, 0 for anything else, -1 for an XAF frame that is malformed. */
static __always_inline int parse_ipv4(struct cursor *c, struct xaf_frame *f)
{
	struct iphdr *iph = c->pos;
	struct udphdr *udp;
	int ret;

	/* a non-first fragment has no UDP header: it cannot be recognised, leave it to the kernel */
	if (!ipv4_udp(c, &udp) || iph->version != 4 || !ipv4_first_fragment(iph))
		return 0;
	ret = xaf_udp_header(c, udp);
	if (ret != 1)
		return ret;
	/* From here on it is XAF traffic: anything unexpected is a malformed XAF frame. */
	if (iph->ihl != 5 || (bpf_ntohs(iph->frag_off) & IP_MF))
		return -1;
	f->outer_len = OUTER_IPV4;
	f->l3_len = bpf_ntohs(iph->tot_len);
	f->xaf_len = bpf_ntohs(udp->len);
	if (f->xaf_len < UDP_HDR_LEN || f->l3_len != IPV4_HDR_LEN + f->xaf_len)
		return -1;
	return xaf_over_udp(c, f, udp, XAF_FORM_IPV4);
}

/* As parse_ipv4, for XAF over UDP/IPv6. */
static __always_inline int parse_ipv6(struct cursor *c, struct xaf_frame *f)
{
	struct ipv6hdr *ip6 = c->pos;
	struct udphdr *udp;
	int ret;

	if (!ipv6_udp(c, &udp) || ip6->version != 6)
		return 0;
	ret = xaf_udp_header(c, udp);
	if (ret != 1)
		return ret;
	f->outer_len = OUTER_IPV6;
	f->l3_len = IPV6_HDR_LEN + bpf_ntohs(ip6->payload_len);
	f->xaf_len = bpf_ntohs(udp->len);
	if (f->xaf_len < UDP_HDR_LEN || bpf_ntohs(ip6->payload_len) != f->xaf_len)
		return -1;
	return xaf_over_udp(c, f, udp, XAF_FORM_IPV6);
}

/* As parse_ipv4, for the identifier-native ID form. */
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
	f->udp_source = 0;
	f->form = XAF_FORM_ID;
	c->pos = id + 1;
	return 1;
}

/*
 * The outer headers of any form: 1 for an XAF frame (c->pos then at its XAF header), 0 for anything else, -1 for an
 * XAF frame that is malformed.
 */
static __always_inline int parse_outer(struct cursor *c, struct xaf_frame *f)
{
	struct ethhdr *eth;
	int proto = parse_ethhdr(c, &eth);

	if (proto == bpf_htons(ETH_P_IP))
		return parse_ipv4(c, f);
	if (proto == bpf_htons(ETH_P_IPV6))
		return parse_ipv6(c, f);
	if (proto == bpf_htons(XAF_ETH_P_ID))
		return parse_id(c, f);
	return 0;
}

/*
 * The XAF header at c->pos, checked against what the outer headers claim: the header, or NULL for a malformed
 * frame. Bytes beyond the claimed length are padding; frame_len (fragments included) must hold the rest.
 */
static __always_inline struct xaf_hdr *parse_xaf_hdr(struct cursor *c, const struct xaf_frame *f, __u32 frame_len)
{
	struct xaf_hdr *xaf = c->pos;
	__u16 payload_len;

	/* bounds: the whole 48-byte XAF header */
	if ((void *)(xaf + 1) > c->end)
		return NULL;
	/* magic (2 bytes) + version (1) in one load; type, the fourth byte, is masked out */
	if ((word32(xaf) & bpf_htonl(0xFFFFFF00)) != bpf_htonl((XAF_MAGIC << 16) | (XAF_VERSION << 8)) ||
	    xaf->hdr_len != XAF_HDR_LEN)
		return NULL;
	payload_len = bpf_ntohs(word16((void *)xaf + 40));
	if (f->xaf_len != XAF_HDR_LEN + (__u32)payload_len)
		return NULL;
	/* The frame must hold everything the headers claim; bytes beyond that are padding to trim. */
	if (frame_len < ETH_HLEN + f->l3_len)
		return NULL;
	return xaf;
}

/* ---- The benchmark and test programs: finding the XAF header ---------------------------- */

/*
 * The XAF header of a frame of any form, or NULL: for programs that only meet frames the benchmark or a test built,
 * or a gateway forwarded (bench/src/main/bpf, bench/src/test/bpf), and validate nothing. *udp: the UDP header in
 * the IP forms, NULL in the ID form. The whole XAF header must lie in the first buffer and start with XAF_MAGIC;
 * an IP form's UDP header must be to the XAF port. Looser than parse_outer (no version, fragment, length or ID
 * next-header checks), and stricter in one point: IPv4 options (IHL above 5) are not looked past.
 */
static __always_inline struct xaf_hdr *find_xaf_hdr(struct cursor *c, struct udphdr **udp)
{
	struct ethhdr *eth;
	struct udphdr *u;
	struct xaf_hdr *xaf;
	int proto = parse_ethhdr(c, &eth);

	*udp = NULL;
	if (proto == bpf_htons(XAF_ETH_P_ID)) {
		struct xaf_id_hdr *id = c->pos;

		xaf = (void *)(id + 1);
		/* bounds: the ID header and the whole XAF header */
		if ((void *)(xaf + 1) > c->end)
			return NULL;
		return xaf->magic == bpf_htons(XAF_MAGIC) ? xaf : NULL;
	}
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = c->pos;

		if (!ipv4_udp(c, &u) || iph->ihl != 5)
			return NULL;
		u = (void *)(iph + 1); /* the same header at a constant offset, which spares clang the IHL arithmetic */
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		if (!ipv6_udp(c, &u))
			return NULL;
	} else {
		return NULL;
	}
	xaf = (void *)(u + 1);
	/* bounds: the UDP header and the whole XAF header */
	if ((void *)(xaf + 1) > c->end || u->dest != bpf_htons(XAF_UDP_PORT) || xaf->magic != bpf_htons(XAF_MAGIC))
		return NULL;
	*udp = u;
	return xaf;
}

#endif /* XAF_PARSE_H */
