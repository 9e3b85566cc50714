/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xdp_pass.bpf.c - passes every frame.
 *
 * XDP_REDIRECT into a veth only delivers when the target veth's PEER runs an XDP program (the peer's
 * NAPI path is what consumes redirected frames). The testbed attaches this one to the peers of the
 * gateway ports; it does nothing else.
 *
 * Loaded with fragment support (xdp.frags): a veth whose peer runs a program without it caps that peer's MTU at
 * about 3.5 kB, so jumbo frames need every XDP program on the path to be frags-aware.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp.frags")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
