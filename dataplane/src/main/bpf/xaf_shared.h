/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xaf_shared.h - the one header shared by the XDP program and the Java control plane.
 *
 * Everything here is either wire format (big-endian on the wire) or a BPF map key/value (host order,
 * x86-64 layout). io.xaforward.dataplane.SharedLayouts mirrors the map structs field by field, and
 * SharedLayoutsTest compiles a probe against this header to check that offsets and sizes agree.
 * docs/PROTOCOL.md is the specification of the wire format.
 */
#ifndef XAF_SHARED_H
#define XAF_SHARED_H

#include <linux/types.h>

/* ---- Wire constants ---------------------------------------------------------------------- */

#define XAF_MAGIC          0x5846  /* "XF" */
#define XAF_VERSION        1
#define XAF_HDR_LEN        48      /* bytes; a multiple of 4 so bpf_csum_diff can sum it */
#define XAF_UDP_PORT       9450    /* UDP destination port that marks XAF over IPv4/IPv6 */
#define XAF_ETH_P_ID       0x0812  /* EtherType of the identifier-native (ID) network form */
#define XAF_ID_HDR_LEN     12
#define XAF_ID_NEXT_XAF    0xFD    /* ID header next_header value for XAF (RFC 3692 experimental) */

enum xaf_msg_type {
	XAF_T_DATA    = 1,  /* a chunk of a gradient message */
	XAF_T_ACK     = 2,  /* selective acknowledgement */
	XAF_T_NACK    = 3,  /* negative acknowledgement (request retransmission) */
	XAF_T_CONTROL = 4,  /* control-plane message (barrier, hello, ...) */
};

enum xaf_elem_type {
	XAF_E_BYTES = 0,
	XAF_E_F32   = 1,
	XAF_E_F16   = 2,
	XAF_E_BF16  = 3,
	XAF_E_I32   = 4,
	XAF_E_F64   = 5,
	XAF_E_I8_BLOCKS = 6,  /* int8 values in blocks with a float32 scale each (docs/PROTOCOL.md) */
	XAF_E_I4_BLOCKS = 7,  /* 4-bit values in blocks with a float32 scale each */
};

/* Network forms (modalities) a gateway port speaks. */
enum xaf_form {
	XAF_FORM_NONE = 0,
	XAF_FORM_IPV4 = 1,  /* Ethernet / IPv4 / UDP(XAF_UDP_PORT) / XAF / payload */
	XAF_FORM_IPV6 = 2,  /* Ethernet / IPv6 / UDP(XAF_UDP_PORT) / XAF / payload */
	XAF_FORM_ID   = 3,  /* Ethernet(0x0812) / ID header / XAF / payload */
};

/* XAF header, 48 bytes, all fields big-endian (see docs/PROTOCOL.md for the diagram). */
struct xaf_hdr {
	__be16 magic;          /*  0 XAF_MAGIC */
	__u8   version;        /*  2 XAF_VERSION */
	__u8   type;           /*  3 enum xaf_msg_type */
	__u8   flags;          /*  4 XAF_F_* */
	__u8   hop_limit;      /*  5 decremented by every gateway; dropped when it would reach 0 */
	__u8   hdr_len;        /*  6 XAF_HDR_LEN for version 1 */
	__u8   elem_type;      /*  7 enum xaf_elem_type of the payload */
	__be32 network_id;     /*  8 network index identifier: the forwarding key */
	__be32 job_id;         /* 12 */
	__be32 job_token;      /* 16 shared secret per job, checked by gateways */
	__be16 src_rank;       /* 20 */
	__be16 dst_rank;       /* 22 */
	__be32 step;           /* 24 training step */
	__be32 bucket_id;      /* 28 gradient bucket (tensor group) */
	__be32 chunk_index;    /* 32 */
	__be32 chunk_count;    /* 36 */
	__be16 payload_len;    /* 40 bytes of payload after this header */
	__be16 payload_sum;    /* 42 ones'-complement 16-bit sum of the payload (not inverted) */
	__be32 payload_crc32c; /* 44 end-to-end CRC32C of the payload */
} __attribute__((packed));

#define XAF_F_LAST_CHUNK   0x01  /* chunk_index == chunk_count - 1 */
#define XAF_F_RETRANSMIT   0x02
#define XAF_F_ACK_REQ      0x04

/* ID-form header, 12 bytes, after an Ethernet header with EtherType XAF_ETH_P_ID. */
struct xaf_id_hdr {
	__be32 src_id;         /* 0 identity of the sending node (the gateway, after a hop) */
	__be32 dst_id;         /* 4 identity of the destination = network index identifier */
	__u8   next_hdr;       /* 8 XAF_ID_NEXT_XAF */
	__u8   reserved;       /* 9 zero */
	__be16 length;         /* 10 bytes after this header (XAF header + payload) */
} __attribute__((packed));

/* ---- BPF maps: keys and values (host byte order unless the name says _be) ----------------- */

/* routes: HASH, key __u32 network_id (host order) -> struct xaf_route */
enum xaf_route_action {
	XAF_ACT_FORWARD = 0,  /* rebuild outer headers for egress_form and redirect via tx_ports[tx_slot] */
	XAF_ACT_LOCAL   = 1,  /* deliver to a local AF_XDP socket through xsks[rx queue] */
};

struct xaf_route {
	__u32 tx_slot;         /* key into the tx_ports devmap */
	__u8  action;          /* enum xaf_route_action */
	__u8  egress_form;     /* enum xaf_form */
	__u16 src_port_span;   /* UDP source ports the route spreads flows over; 0 or 1: always src_port (PROTOCOL.md §7) */
	__u64 ingress_mask;    /* bit i set: frames may arrive on the port with slot i; 0 = any port but tx_slot's
	                        * (a frame never leaves by the port it arrived on unless that port's bit is set) */
	__u32 job_id;          /* the route serves exactly this job ... */
	__u32 job_token;       /* ... and frames must carry this token */
	__u32 reserved0;       /* zero */
	__u32 src_id;          /* ID form: src_id written into the ID header */
	__u8  src_mac[6];      /* egress Ethernet source */
	__u8  dst_mac[6];      /* next hop Ethernet destination */
	__u8  src_ip[16];      /* IPv4: first 4 bytes, network order; IPv6: 16 bytes */
	__u8  dst_ip[16];
	__be16 src_port;       /* UDP source port written on egress: the first of src_port_span ports */
	__be16 dst_port;       /* UDP destination port written on egress (normally XAF_UDP_PORT) */
	__u32 reserved1;
};                             /* 88 bytes */

/* ports: HASH, key __u32 ingress ifindex -> struct xaf_port. Frames on ifindexes not in this map pass. */
struct xaf_port {
	__u32 slot;            /* 0..63, the bit in xaf_route.ingress_mask */
	__u8  form;            /* enum xaf_form this interface speaks */
	__u8  max_hop;         /* hop_limit cap at ingress: larger values are clamped to it (PROTOCOL.md §6); 0 = none */
	__u8  reserved[2];
};

/* counters: PERCPU_ARRAY of one struct xaf_counters (key 0), indexed inside by enum xaf_counter. */
enum xaf_counter {
	XAF_C_RX_XAF = 0,         /* XAF frames seen on a port */
	XAF_C_PASS_NON_XAF,       /* non-XAF frames passed to the kernel untouched */
	XAF_C_FORWARDED,          /* redirected to an egress port */
	XAF_C_TO_LOCAL,           /* redirected to a local AF_XDP socket */
	XAF_C_DROP_MALFORMED,     /* bad magic/version/lengths, truncated, IP options/fragments */
	XAF_C_DROP_NO_ROUTE,      /* unknown network index identifier */
	XAF_C_DROP_HOP_LIMIT,     /* hop limit exhausted */
	XAF_C_DROP_BAD_TOKEN,     /* job id/token do not match the route */
	XAF_C_DROP_INGRESS,       /* route does not allow the ingress port */
	XAF_C_DROP_REDIRECT,      /* devmap/xskmap redirect failed */
	XAF_C_DROP_BAD_FORM,      /* route egress form unknown */
	XAF_C_DROP_TOO_BIG,       /* the rebuilt frame does not fit the egress port's MTU, the egress form's length
	                           * fields, or a local socket's buffer */
	XAF_C_DROP_HAIRPIN,       /* the route leaves by the port the frame arrived on and does not list it as ingress */
	XAF_C__MAX,
};
#define XAF_COUNTERS 16       /* slots per array in struct xaf_counters; >= XAF_C__MAX */

/* tx_ports: DEVMAP, key slot -> egress ifindex. xsks: XSKMAP, key rx queue -> AF_XDP socket. */
/*
 * port_mtus: ARRAY, key slot -> __u32 MTU of the port with that slot: the most bytes a frame may carry after its
 * Ethernet header (the IP packet, or the ID header + XAF header + payload). 0: no port at that slot. A frame is
 * forwarded only when its rebuilt length minus the Ethernet header is at most this (docs/PROTOCOL.md §7).
 */
#define XAF_MAX_PORTS   64

/*
 * All counters of one CPU in one map value, so a frame costs one map lookup to count (not one per counter), per
 * port included: the port arrays are indexed by port slot (xaf_port.slot for receive, xaf_route.tx_slot for
 * transmit; the gateway uses a port's slot for both).
 */
struct xaf_counters {
	__u64 packets[XAF_COUNTERS];          /* frames per enum xaf_counter */
	__u64 bytes[XAF_COUNTERS];            /* ingress frame lengths per enum xaf_counter */
	__u64 port_rx_packets[XAF_MAX_PORTS]; /* XAF frames received on the port (as RX_XAF) */
	__u64 port_rx_bytes[XAF_MAX_PORTS];   /* their ingress frame lengths */
	__u64 port_tx_packets[XAF_MAX_PORTS]; /* frames forwarded out of the port (as FORWARDED) */
	__u64 port_tx_bytes[XAF_MAX_PORTS];   /* their egress frame lengths */
	__u64 port_tx_too_big[XAF_MAX_PORTS]; /* frames for the port dropped as too big for its MTU (as DROP_TOO_BIG) */
};                                        /* 256 + 5 * 512 = 2816 bytes */
#define XAF_MAX_ROUTES  65536
#define XAF_MAX_QUEUES  64

#endif /* XAF_SHARED_H */
