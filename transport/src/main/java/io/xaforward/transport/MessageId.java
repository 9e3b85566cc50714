package io.xaforward.transport;

/**
 * Names one gradient message within a job: the training step and the gradient bucket. Together with the source and
 * destination ranks (given to {@link ReliableTransport#send}/{@link ReliableTransport#expect}) it is the key under
 * which the receiver reassembles chunks; the job id must be the transport's own (packets of other jobs are dropped).
 */
public record MessageId(int jobId, int step, int bucketId) {
    @Override
    public String toString() {
        return "(step " + Integer.toUnsignedString(step) + ", bucket " + Integer.toUnsignedString(bucketId) + ")";
    }
}
