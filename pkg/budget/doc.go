// Package budget holds the GPU-hour budgets (GPUBudget, GPUClusterBudget):
// every replica tracks what the pods and claims of each budget's namespaces
// burn (their timelines, bounded by what the replica observed) and answers
// a budget's standing now for admission; the elected replica checkpoints
// the accrual in each budget's status, resumes from it after a restart or
// a change of leader, and rolls the windows over.
package budget
