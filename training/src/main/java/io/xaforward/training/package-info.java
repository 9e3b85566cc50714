/**
 * Data-parallel GPT training with DJL (PyTorch engine, CPU): the workload whose gradient all-reduce XAForward
 * carries. {@link io.xaforward.training.DataParallelTrainer} runs one rank; gradients of all parameters travel as one
 * flat float32 buffer through a {@link io.xaforward.training.GradientReducer}, which the collective layer implements
 * over the network and {@link io.xaforward.training.InProcessReducer} implements across threads for tests.
 */
package io.xaforward.training;
