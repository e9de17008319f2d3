// Package limits holds what one inference request may hold and send
// through the sidecar, before it reaches Triton or the controllable
// models' pipeline: the budget of request bodies held at once over both
// protocols (Budget, limits.max_inflight_bytes), the counts of a
// request's inputs, requested outputs and parameters read from the wire
// without decoding it (CheckCounts, limits.max_inputs, max_outputs and
// max_parameters), the triton_* parameters Triton reserves, and the gRPC
// statuses of a refusal (Status, BudgetStatus) with the reason the
// rejection metric counts (Reason), and an HTTP request's body read within
// its size limit and the budget (ReadBody).
package limits
