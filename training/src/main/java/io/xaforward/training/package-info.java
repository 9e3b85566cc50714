/**
 * Data-parallel GPT training with DJL (PyTorch engine, CPU): the workload whose gradient all-reduce XAForward
 * carries. {@link io.xaforward.training.DataParallelTrainer} runs one rank; gradients of all parameters travel as one
 * flat float32 buffer through a {@link io.xaforward.training.GradientReducer}, which the collective layer implements
 * over the network (the tests implement it across threads).
 */
package io.xaforward.training;
