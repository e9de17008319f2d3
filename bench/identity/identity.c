/*
 * A Triton backend whose models copy their input to their output: the
 * thinnest step an ensemble can have, so that an ensemble with it between
 * two models measures what one more step costs in Triton itself (its
 * scheduling, the step's queue and tensors), the floor under any backend's
 * step. bench/sidecar-controllable.sh builds it (cc, against the project's
 * declarations of Triton's C API in backend/triton.h) into
 * .cache/bench/identity/libtriton_identity.so and serves it as backend
 * "identity" for bench/models/identity_synth (the identity way).
 *
 * Each request's input "feature" (one tensor in host memory, any number of
 * buffers) becomes its output "corrected" of the same datatype and shape,
 * byte for byte; statistics are reported per request and per batch as the
 * react backend does. A request whose input is missing or not in host
 * memory gets an error response; the others of its batch are unaffected.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "triton.h"

#define INPUT "feature"
#define OUTPUT "corrected"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static TRITONSERVER_Error *fail(const char *what)
{
	return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, what);
}

/* copy writes the request's input into the response's output. */
static TRITONSERVER_Error *copy(TRITONBACKEND_Request *req, TRITONBACKEND_Response *resp, uint64_t *rows)
{
	TRITONBACKEND_Input *in;
	TRITONSERVER_DataType dt;
	const int64_t *shape;
	uint32_t dims, buffers;
	uint64_t size;
	TRITONSERVER_Error *err = TRITONBACKEND_RequestInput(req, INPUT, &in);
	if (err == NULL)
		err = TRITONBACKEND_InputProperties(in, NULL, &dt, &shape, &dims, &size, &buffers);
	if (err != NULL)
		return err;
	if (dims == 0)
		return fail("identity: input " INPUT " has no batch dimension");
	*rows = (uint64_t)shape[0];
	TRITONBACKEND_Output *out;
	if ((err = TRITONBACKEND_ResponseOutput(resp, &out, OUTPUT, dt, shape, dims)) != NULL)
		return err;
	if (size == 0)
		return NULL;
	void *dst;
	TRITONSERVER_MemoryType mem = TRITONSERVER_MEMORY_CPU;
	int64_t mem_id = 0;
	if ((err = TRITONBACKEND_OutputBuffer(out, &dst, size, &mem, &mem_id)) != NULL)
		return err;
	if (mem == TRITONSERVER_MEMORY_GPU)
		return fail("identity: the server gave GPU memory for the output");
	uint64_t at = 0;
	for (uint32_t b = 0; b < buffers; b++) {
		const void *src;
		uint64_t n;
		mem = TRITONSERVER_MEMORY_CPU;
		mem_id = 0;
		if ((err = TRITONBACKEND_InputBuffer(in, b, &src, &n, &mem, &mem_id)) != NULL)
			return err;
		if (mem == TRITONSERVER_MEMORY_GPU)
			return fail("identity: input " INPUT " is in GPU memory");
		if (n > size - at)
			return fail("identity: input " INPUT ": its buffers hold more than its size");
		memcpy((char *)dst + at, src, n);
		at += n;
	}
	if (at != size)
		return fail("identity: input " INPUT ": its buffers hold less than its size");
	return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance *inst, TRITONBACKEND_Request **requests, const uint32_t count)
{
	uint64_t start = now_ns(), total = 0;
	for (uint32_t i = 0; i < count; i++) {
		TRITONBACKEND_Request *req = requests[i];
		TRITONBACKEND_Response *resp;
		uint64_t rows = 0;
		TRITONSERVER_Error *err = TRITONBACKEND_ResponseNew(&resp, req);
		if (err != NULL) {
			/* No response to send the error with: the request is released. */
			TRITONSERVER_LogMessage(TRITONSERVER_LOG_ERROR, __FILE__, __LINE__, TRITONSERVER_ErrorMessage(err));
			TRITONSERVER_ErrorDelete(err);
			resp = NULL;
		} else {
			err = copy(req, resp, &rows);
		}
		uint64_t end = now_ns();
		if (resp != NULL) {
			TRITONSERVER_Error *e = TRITONBACKEND_ResponseSend(resp, REACT_RESPONSE_COMPLETE_FINAL, err);
			if (e != NULL)
				TRITONSERVER_ErrorDelete(e);
		}
		TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceReportStatistics(inst, req, err == NULL && resp != NULL, start, start, end, now_ns());
		if (e != NULL)
			TRITONSERVER_ErrorDelete(e);
		if (err == NULL && resp != NULL)
			total += rows;
		if (err != NULL)
			TRITONSERVER_ErrorDelete(err);
		if ((e = TRITONBACKEND_RequestRelease(req, REACT_REQUEST_RELEASE_ALL)) != NULL)
			TRITONSERVER_ErrorDelete(e);
	}
	if (total > 0) {
		uint64_t end = now_ns();
		TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceReportBatchStatistics(inst, total, start, start, end, end);
		if (e != NULL)
			TRITONSERVER_ErrorDelete(e);
	}
	return NULL;
}
