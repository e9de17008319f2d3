// Package embeddings reads the .npy embeddings of calibrate fit (a
// contract): DIR/<task>.merged.npy holds the merged backbone's features
// and DIR/<task>.expert.npy the task expert's, float32 or float64, N×D,
// one sample per row, rows paired. Pair streams one task's two files as a
// pairs.Source, checking both headers before any data is read and every
// value as it is read; DiscoverTasks lists the tasks of a directory.
package embeddings
