package io.xaforward.common;

/** An etcd call failed: unreachable, refused, or an answer that makes no sense. The message names the endpoint. */
public class EtcdException extends RuntimeException {
    public EtcdException(String message) {
        super(message);
    }

    /**
     * etcd answered, but the client refused the answer: more keys or bytes than its {@link EtcdClient.Limits}, or an
     * answer of the wrong shape. Unlike an unreachable etcd, this is about what was asked for: a reader that asks for
     * one part of a registry at a time can skip that part and go on with the others.
     */
    public static final class AnswerRefused extends EtcdException {
        public AnswerRefused(String message) {
            super(message);
        }
    }
}
