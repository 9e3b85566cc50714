/**
 * AF_XDP sockets from Java through the FFM API, without libxdp: {@link XskSocket}
 * (UMEM, four mmapped rings, receive with a handler, zero-copy claim/submit/flush transmit),
 * {@link XskRing} flyweights with acquire/release index semantics,
 * {@link Umem} frame management and {@link XskRedirect},
 * which points the XAF XDP program's LOCAL routes at a socket so an endpoint receives its XAF frames in user space
 * while every other frame still reaches the kernel. On veth only copy mode exists; see /work/shared/field-notes.md.
 */
package io.xaforward.dataplane.xsk;
