/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xaf_redirect_ref.bpf.c - the benchmark's bare-XDP reference: redirects every frame to tx_port[0], parsing
 * nothing, the least work an XDP forwarder can do (what xdp-bench redirect-map measures; that tool fails to load on
 * kernel 6.18 because its tracepoint program needs a BTF type the kernel no longer has).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} tx_port SEC(".maps");

SEC("xdp.frags") /* jumbo frames too, like the gateway */
int xaf_redirect_ref(struct xdp_md *ctx)
{
	return bpf_redirect_map(&tx_port, 0, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
