/*
 * The part of Triton Inference Server's C API that the react backend uses,
 * declared by this project from the API's documented signatures and enum
 * values (tritonbackend.h, backend API 1.19, and tritonserver.h, server API
 * 1.34: Triton 2.51, release 24.10), custom metrics included. Triton ships these headers; its Python
 * wheel does not, and only a handful of declarations are needed, so they
 * are written here rather than fetched at build time.
 *
 * Every function Triton implements is declared weak: the library links
 * without libtritonserver.so (a weak reference left undefined is allowed),
 * and when tritonserver loads the library the dynamic linker binds each
 * one to the server's definition. backend_api_present() tells the two
 * cases apart.
 *
 * The enum values below are part of Triton's ABI: they are the numbers the
 * server passes and expects, in declaration order from zero unless given.
 */
#ifndef REACT_TRITON_H
#define REACT_TRITON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The backend API version this backend was written against. A server whose
 * major version differs, or whose minor version is lower, is refused at
 * TRITONBACKEND_Initialize. */
#define REACT_BACKEND_API_MAJOR 1
#define REACT_BACKEND_API_MINOR 19

/* Opaque objects owned by the server. */
typedef struct TRITONSERVER_Error TRITONSERVER_Error;
typedef struct TRITONSERVER_Message TRITONSERVER_Message;
typedef struct TRITONBACKEND_Backend TRITONBACKEND_Backend;
typedef struct TRITONBACKEND_Model TRITONBACKEND_Model;
typedef struct TRITONBACKEND_ModelInstance TRITONBACKEND_ModelInstance;
typedef struct TRITONBACKEND_Request TRITONBACKEND_Request;
typedef struct TRITONBACKEND_Response TRITONBACKEND_Response;
typedef struct TRITONBACKEND_Input TRITONBACKEND_Input;
typedef struct TRITONBACKEND_Output TRITONBACKEND_Output;
typedef struct TRITONSERVER_Parameter TRITONSERVER_Parameter;
typedef struct TRITONSERVER_MetricFamily TRITONSERVER_MetricFamily;
typedef struct TRITONSERVER_Metric TRITONSERVER_Metric;

/* Error codes (TRITONSERVER_Error_Code). */
typedef enum {
	TRITONSERVER_ERROR_UNKNOWN = 0,
	TRITONSERVER_ERROR_INTERNAL = 1,
	TRITONSERVER_ERROR_NOT_FOUND = 2,
	TRITONSERVER_ERROR_INVALID_ARG = 3,
	TRITONSERVER_ERROR_UNAVAILABLE = 4,
	TRITONSERVER_ERROR_UNSUPPORTED = 5,
	TRITONSERVER_ERROR_ALREADY_EXISTS = 6,
	TRITONSERVER_ERROR_CANCELLED = 7
} TRITONSERVER_Error_Code;

/* Tensor element types (TRITONSERVER_DataType). */
typedef enum {
	TRITONSERVER_TYPE_INVALID = 0,
	TRITONSERVER_TYPE_BOOL = 1,
	TRITONSERVER_TYPE_UINT8 = 2,
	TRITONSERVER_TYPE_UINT16 = 3,
	TRITONSERVER_TYPE_UINT32 = 4,
	TRITONSERVER_TYPE_UINT64 = 5,
	TRITONSERVER_TYPE_INT8 = 6,
	TRITONSERVER_TYPE_INT16 = 7,
	TRITONSERVER_TYPE_INT32 = 8,
	TRITONSERVER_TYPE_INT64 = 9,
	TRITONSERVER_TYPE_FP16 = 10,
	TRITONSERVER_TYPE_FP32 = 11,
	TRITONSERVER_TYPE_FP64 = 12,
	TRITONSERVER_TYPE_BYTES = 13,
	TRITONSERVER_TYPE_BF16 = 14
} TRITONSERVER_DataType;

/* Where a buffer lives (TRITONSERVER_MemoryType). */
typedef enum {
	TRITONSERVER_MEMORY_CPU = 0,
	TRITONSERVER_MEMORY_CPU_PINNED = 1,
	TRITONSERVER_MEMORY_GPU = 2
} TRITONSERVER_MemoryType;

/* Request parameter value types (TRITONSERVER_ParameterType). */
typedef enum {
	TRITONSERVER_PARAMETER_STRING = 0,
	TRITONSERVER_PARAMETER_INT = 1,
	TRITONSERVER_PARAMETER_BOOL = 2,
	TRITONSERVER_PARAMETER_DOUBLE = 3,
	TRITONSERVER_PARAMETER_BYTES = 4
} TRITONSERVER_ParameterType;

/* Log levels (TRITONSERVER_LogLevel). */
typedef enum {
	TRITONSERVER_LOG_INFO = 0,
	TRITONSERVER_LOG_WARN = 1,
	TRITONSERVER_LOG_ERROR = 2,
	TRITONSERVER_LOG_VERBOSE = 3
} TRITONSERVER_LogLevel;

/* Kinds of custom metrics (TRITONSERVER_MetricKind, server API 1.34). */
typedef enum {
	TRITONSERVER_METRIC_KIND_COUNTER = 0,
	TRITONSERVER_METRIC_KIND_GAUGE = 1,
	TRITONSERVER_METRIC_KIND_HISTOGRAM = 2
} TRITONSERVER_MetricKind;

/* How model files reach a backend (TRITONBACKEND_ArtifactType). */
typedef enum {
	TRITONBACKEND_ARTIFACT_FILESYSTEM = 0
} TRITONBACKEND_ArtifactType;

/* Flags: TRITONSERVER_REQUEST_RELEASE_ALL and
 * TRITONSERVER_RESPONSE_COMPLETE_FINAL. */
#define REACT_REQUEST_RELEASE_ALL 1u
#define REACT_RESPONSE_COMPLETE_FINAL 1u

#define REACT_WEAK __attribute__((weak))

/* Errors. A NULL TRITONSERVER_Error* means success. */
REACT_WEAK TRITONSERVER_Error *TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char *msg);
REACT_WEAK void TRITONSERVER_ErrorDelete(TRITONSERVER_Error *error);
REACT_WEAK TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error *error);
REACT_WEAK const char *TRITONSERVER_ErrorMessage(TRITONSERVER_Error *error);

/* Logging into the server's log. */
REACT_WEAK TRITONSERVER_Error *TRITONSERVER_LogMessage(TRITONSERVER_LogLevel level, const char *filename, const int line, const char *msg);

/* Messages (a model configuration as JSON). */
REACT_WEAK TRITONSERVER_Error *TRITONSERVER_MessageSerializeToJson(TRITONSERVER_Message *message, const char **base, size_t *byte_size);
REACT_WEAK TRITONSERVER_Error *TRITONSERVER_MessageDelete(TRITONSERVER_Message *message);

/* The backend and its configuration. */
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_ApiVersion(uint32_t *major, uint32_t *minor);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_BackendName(TRITONBACKEND_Backend *backend, const char **name);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_BackendConfig(TRITONBACKEND_Backend *backend, TRITONSERVER_Message **backend_config);

/* Models. config_version 1 asks for the configuration as protobuf JSON. */
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_ModelName(TRITONBACKEND_Model *model, const char **name);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_ModelVersion(TRITONBACKEND_Model *model, uint64_t *version);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_ModelRepository(TRITONBACKEND_Model *model, TRITONBACKEND_ArtifactType *artifact_type, const char **location);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_ModelConfig(TRITONBACKEND_Model *model, const uint32_t config_version, TRITONSERVER_Message **model_config);

/* Model instances. */
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Model **model);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_ModelInstanceName(TRITONBACKEND_ModelInstance *instance, const char **name);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportStatistics(TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request *request, const bool success,
	const uint64_t exec_start_ns, const uint64_t compute_start_ns, const uint64_t compute_end_ns, const uint64_t exec_end_ns);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportBatchStatistics(TRITONBACKEND_ModelInstance *instance, const uint64_t batch_size,
	const uint64_t exec_start_ns, const uint64_t compute_start_ns, const uint64_t compute_end_ns, const uint64_t exec_end_ns);

/* Requests: inputs and parameters. A buffer's memory type and id are in-out
 * arguments: the preferred place on the way in, the actual one on the way
 * out. */
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_RequestInput(TRITONBACKEND_Request *request, const char *name, TRITONBACKEND_Input **input);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_InputProperties(TRITONBACKEND_Input *input, const char **name, TRITONSERVER_DataType *datatype,
	const int64_t **shape, uint32_t *dims_count, uint64_t *byte_size, uint32_t *buffer_count);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_InputBuffer(TRITONBACKEND_Input *input, const uint32_t index, const void **buffer, uint64_t *buffer_byte_size,
	TRITONSERVER_MemoryType *memory_type, int64_t *memory_type_id);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_RequestParameterCount(TRITONBACKEND_Request *request, uint32_t *count);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_RequestParameter(TRITONBACKEND_Request *request, const uint32_t index, const char **key,
	TRITONSERVER_ParameterType *type, const void **vvalue);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_RequestRelease(TRITONBACKEND_Request *request, uint32_t release_flags);

/* Responses. */
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_ResponseNew(TRITONBACKEND_Response **response, TRITONBACKEND_Request *request);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_ResponseDelete(TRITONBACKEND_Response *response);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response *response, TRITONBACKEND_Output **output, const char *name,
	const TRITONSERVER_DataType datatype, const int64_t *shape, const uint32_t dims_count);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output *output, void **buffer, const uint64_t buffer_byte_size,
	TRITONSERVER_MemoryType *memory_type, int64_t *memory_type_id);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_ResponseSetStringParameter(TRITONBACKEND_Response *response, const char *name, const char *value);
REACT_WEAK TRITONSERVER_Error *TRITONBACKEND_ResponseSend(TRITONBACKEND_Response *response, const uint32_t send_flags, TRITONSERVER_Error *error);

/* Custom metrics (tritonserver.h): a family per name, registered with the
 * server's Prometheus registry (its metrics endpoint); a metric per set of
 * labels, each label a string parameter, which the caller may delete once
 * the metric is made. Metrics with the same labels in one family share
 * their value (the server counts references), and a metric is deleted
 * before its family. */
REACT_WEAK TRITONSERVER_Parameter *TRITONSERVER_ParameterNew(const char *name, const TRITONSERVER_ParameterType type, const void *value);
REACT_WEAK void TRITONSERVER_ParameterDelete(TRITONSERVER_Parameter *parameter);
REACT_WEAK TRITONSERVER_Error *TRITONSERVER_MetricFamilyNew(TRITONSERVER_MetricFamily **family, const TRITONSERVER_MetricKind kind, const char *name,
	const char *description);
REACT_WEAK TRITONSERVER_Error *TRITONSERVER_MetricFamilyDelete(TRITONSERVER_MetricFamily *family);
REACT_WEAK TRITONSERVER_Error *TRITONSERVER_MetricNew(TRITONSERVER_Metric **metric, TRITONSERVER_MetricFamily *family,
	const TRITONSERVER_Parameter **labels, const uint64_t label_count);
REACT_WEAK TRITONSERVER_Error *TRITONSERVER_MetricDelete(TRITONSERVER_Metric *metric);
REACT_WEAK TRITONSERVER_Error *TRITONSERVER_MetricIncrement(TRITONSERVER_Metric *metric, double value);

/* backend_api_present reports whether the server's functions are bound:
 * true inside tritonserver, false in a process without it. */
static inline bool backend_api_present(void) { return TRITONBACKEND_ApiVersion != NULL && TRITONSERVER_ErrorNew != NULL; }

/* metrics_api_present reports whether the server has the custom metrics
 * functions (a server built without metrics support still defines them,
 * and refuses a family with an error). */
static inline bool metrics_api_present(void) {
	return TRITONSERVER_ParameterNew != NULL && TRITONSERVER_ParameterDelete != NULL && TRITONSERVER_MetricFamilyNew != NULL &&
	       TRITONSERVER_MetricFamilyDelete != NULL && TRITONSERVER_MetricNew != NULL && TRITONSERVER_MetricDelete != NULL &&
	       TRITONSERVER_MetricIncrement != NULL;
}

#endif
