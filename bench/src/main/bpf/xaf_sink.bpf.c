/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xaf_sink.bpf.c - the benchmark's receiver: counts XAF DATA frames and drops them in the driver hook, so the
 * receiving host is never what limits a measurement. Tracks chunk_index per source rank: a jump forward counts the
 * missing numbers as gaps, a step back counts as reordered. Everything else (XAF control frames used for RTT
 * probes, ARP, ordinary IP traffic) passes to the kernel.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xaf_shared.h"
#include "xaf_parse.h"

enum sink_counter {
	SINK_FRAMES = 0,   /* XAF DATA frames received */
	SINK_BYTES,        /* their bytes (whole frame) */
	SINK_GAPS,         /* sequence numbers skipped */
	SINK_REORDERED,    /* frames older than the newest seen from their source */
	SINK__MAX,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SINK__MAX);
	__type(key, __u32);
	__type(value, __u64);
} sink_counters SEC(".maps");

/* last_seq: ARRAY keyed by src_rank & 255; value = newest chunk_index + 1 (0 = nothing seen yet). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
} last_seq SEC(".maps");

static __always_inline void count(__u32 key, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&sink_counters, &key);
	if (v)
		*v += n;
}

SEC("xdp")
int xaf_sink(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct cursor c = { .pos = data, .end = data_end };
	struct udphdr *udp;
	struct xaf_hdr *x = find_xaf_hdr(&c, &udp);
	if (!x || x->type != XAF_T_DATA)
		return XDP_PASS;
	count(SINK_FRAMES, 1);
	count(SINK_BYTES, data_end - data);
	__u32 src = bpf_ntohs(x->src_rank) & 255;
	__u64 *last = bpf_map_lookup_elem(&last_seq, &src);
	if (last) {
		__u64 seq = bpf_ntohl(x->chunk_index);
		if (*last == 0 || seq + 1 > *last) {
			if (*last != 0 && seq > *last)
				count(SINK_GAPS, seq - *last);
			*last = seq + 1;
		} else {
			count(SINK_REORDERED, 1);
		}
	}
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
