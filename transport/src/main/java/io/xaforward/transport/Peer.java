package io.xaforward.transport;

/**
 * Where a {@link DatagramPort} sends a datagram. Each backend has its own kind of address (a socket address for UDP,
 * an endpoint number for the in-memory network, a MAC/queue pair for AF_XDP); the transport only passes them through,
 * so this is deliberately an opaque marker.
 */
public interface Peer {
}
