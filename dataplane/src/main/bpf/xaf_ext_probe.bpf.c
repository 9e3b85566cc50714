/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xaf_ext_probe.bpf.c - asks the kernel whether it runs BPF extension (freplace) programs.
 *
 * libxdp's multiprog dispatcher (xaf gateway --attach dispatcher) runs every program on an interface as an
 * extension of one of its slots, the way xaf_probe_ext below replaces xaf_probe_slot. Some kernels refuse extension
 * programs (built without BPF trampolines, or restricted: they answer EPERM even to root), and libxdp then silently
 * attaches a lone program without a dispatcher, which owns the interface. The gateway loads xaf_probe_target, then
 * xaf_probe_ext against it, before it asks libxdp for anything, so such a kernel gets a clear error instead.
 * Nothing here is ever attached to an interface.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* The slot: global and not inlined, so it keeps its own BTF function the extension can name. */
__attribute__((noinline)) int xaf_probe_slot(struct xdp_md *ctx)
{
	volatile int action = XDP_PASS;

	return ctx ? action : XDP_ABORTED;
}

SEC("xdp")
int xaf_probe_target(struct xdp_md *ctx)
{
	return xaf_probe_slot(ctx);
}

SEC("freplace/xaf_probe_slot")
int xaf_probe_ext(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
