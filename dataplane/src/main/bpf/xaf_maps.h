/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xaf_maps.h - the maps of the XDP gateway. Their keys and values are the structs of xaf_shared.h; the control
 * plane (io.xaforward.dataplane.XafDataplane) finds them by these names.
 */
#ifndef XAF_MAPS_H
#define XAF_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "xaf_shared.h"

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

#endif /* XAF_MAPS_H */
