/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xaf_csum.h - Internet checksums summed inline (no bpf_csum_diff call): 16-bit ones'-complement sums built from
 * 32-bit words in memory order, folded at the end (docs/PROTOCOL.md §5). The UDP checksum of a rebuilt frame never
 * reads the payload: the sender's payload_sum stands for it. csum_replace32 updates a checksum for one changed
 * 32-bit field instead (the benchmark's traffic generator).
 */
#ifndef XAF_CSUM_H
#define XAF_CSUM_H

#include <linux/udp.h>

#include "xaf_shared.h"
#include "xaf_parse.h"

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

/* Sum of the 48-byte XAF header as twelve 32-bit words (memory order), inline instead of bpf_csum_diff. */
static __always_inline __u64 sum_xaf_hdr(const struct xaf_hdr *xaf)
{
	const __u32 *w = (const __u32 *)xaf;

	return (__u64)w[0] + w[1] + w[2] + w[3] + w[4] + w[5] + w[6] + w[7] + w[8] + w[9] + w[10] + w[11];
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

/* The checksum check patched for a 32-bit field that changed from old_be to new_be (both network order). */
static __always_inline __u16 csum_replace32(__u16 check, __u32 old_be, __u32 new_be)
{
	/* RFC 1624 eqn 3: HC' = ~(~HC + ~m + m'), over the two 16-bit halves */
	__u32 sum = (__u16)~check;
	sum += (__u16)~(old_be & 0xffff) + (__u16)~(old_be >> 16);
	sum += (new_be & 0xffff) + (new_be >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	__u16 r = ~sum;
	return r ? r : 0xffff; /* 0 means "no checksum" in UDP */
}

#endif /* XAF_CSUM_H */
