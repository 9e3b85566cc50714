/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xaf_trafficgen.bpf.c - the benchmark's line-rate sender.
 *
 * Run with BPF_PROG_TEST_RUN in live-frames mode (BPF_F_TEST_XDP_LIVE_FRAMES, ctx.ingress_ifindex = the sending
 * veth): the kernel feeds the same XAF frame through this program over and over and transmits whatever it returns
 * XDP_TX for out of that veth, with no socket and no skb on the way. Each frame gets the next sequence number in
 * chunk_index (the sink counts gaps and reordering) and the UDP checksum is patched for the change (RFC 1624).
 *
 * The kernel copies the frame into its page-pool pages only once and recycles them, and a gateway on veth rewrites
 * a frame in place (hop limit, outer headers written into the headroom when the form changes). Without a fix the
 * generator re-sent what the gateway had left behind: frames ran out of hop limit, and cross-form frames no longer
 * parsed as XAF. So the sender writes the original head of the frame (outer headers + XAF header, from `head`) back
 * before every transmission.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xaf_shared.h"
#include "xaf_parse.h"
#include "xaf_csum.h"

/* seq: ARRAY[1] of __u32, the next sequence number (one generator thread drives the program at a time). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} seq SEC(".maps");

#define TRAFFICGEN_HEAD_MAX 128

/* head: ARRAY[1], the first len (< TRAFFICGEN_HEAD_MAX) bytes of the original frame (0: nothing to restore). */
struct trafficgen_head {
	__u32 len;
	__u8  bytes[TRAFFICGEN_HEAD_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct trafficgen_head);
} head SEC(".maps");

SEC("xdp")
int xaf_trafficgen(struct xdp_md *ctx)
{
	__u32 key = 0;
	struct trafficgen_head *h = bpf_map_lookup_elem(&head, &key);
	if (h) {
		__u32 len = h->len & (TRAFFICGEN_HEAD_MAX - 1); /* a mask the verifier can bound: at most 127 bytes */
		if (len)
			bpf_xdp_store_bytes(ctx, 0, h->bytes, len);
	}
	struct cursor c = frame_cursor(ctx); /* after the store: it moved nothing, but a helper call invalidates packet pointers */
	struct udphdr *udp;
	struct xaf_hdr *x = find_xaf_hdr(&c, &udp);
	__u32 *next = bpf_map_lookup_elem(&seq, &key);
	if (!x || !next) /* not an XAF frame: send it unchanged */
		return XDP_TX;
	__u32 n = *next; /* one generator thread at a time: a plain increment is enough (and clang 14 lacks fetch-add results) */
	*next = n + 1;
	__u32 old_be = x->chunk_index, new_be = bpf_htonl(n);
	x->chunk_index = new_be;
	if (udp && udp->check)
		udp->check = csum_replace32(udp->check, old_be, new_be);
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
