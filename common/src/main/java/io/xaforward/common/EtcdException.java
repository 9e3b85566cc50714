package io.xaforward.common;

/** An etcd call failed: unreachable, refused, or an answer that makes no sense. The message names the endpoint. */
public final class EtcdException extends RuntimeException {
    public EtcdException(String message) {
        super(message);
    }
}
