package main

/*
#include <stdlib.h>
#include "triton.h"

// new_metric makes a metric of a family with string labels (names[i] =
// values[i]); the label parameters are deleted once it is made.
static TRITONSERVER_Error *new_metric(TRITONSERVER_Metric **metric, TRITONSERVER_MetricFamily *family, char **names, char **values,
	uint64_t n) {
	const TRITONSERVER_Parameter *labels[8];
	if (n > 8) {
		return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "more than 8 labels");
	}
	for (uint64_t i = 0; i < n; i++) {
		labels[i] = TRITONSERVER_ParameterNew(names[i], TRITONSERVER_PARAMETER_STRING, values[i]);
	}
	TRITONSERVER_Error *err = TRITONSERVER_MetricNew(metric, family, labels, n);
	for (uint64_t i = 0; i < n; i++) {
		if (labels[i] != NULL) {
			TRITONSERVER_ParameterDelete((TRITONSERVER_Parameter *)labels[i]);
		}
	}
	return err;
}
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/mergectl/react-triton/backend/model"
)

// The experiment counters (model.MetricFamilies) as Triton's custom
// metrics: one family per name for the process, made at
// TRITONBACKEND_Initialize and deleted at TRITONBACKEND_Finalize; a metric
// per model and set of labels, made when first counted (as the sidecar's
// series appear) and deleted when the model version unloads. Two versions
// of a model loaded at once share their metrics (Triton counts the
// references), so a reload does not reset the counts.
var (
	families   = map[string]*C.TRITONSERVER_MetricFamily{}
	familyList []*C.TRITONSERVER_MetricFamily
)

// initMetrics makes the metric families. Without them (a server without
// the custom metrics API or without metrics support) the backend counts
// nothing, and says so in the log.
func initMetrics() {
	if !bool(C.metrics_api_present()) {
		logf(logWarn, "react backend: the server has no custom metrics API: experiment metrics are not exported")
		return
	}
	for _, f := range model.MetricFamilies {
		name, help := C.CString(f.Name), C.CString(f.Help)
		var fam *C.TRITONSERVER_MetricFamily
		err := goError("metric family "+f.Name, C.TRITONSERVER_MetricFamilyNew(&fam, C.TRITONSERVER_METRIC_KIND_COUNTER, name, help))
		freeString(name)
		freeString(help)
		if err != nil {
			logf(logWarn, "react backend: %v: experiment metrics are not exported", err)
			finalizeMetrics()
			return
		}
		families[f.Name] = fam
		familyList = append(familyList, fam)
	}
}

// finalizeMetrics deletes the metric families; every model's metrics are
// deleted by then.
func finalizeMetrics() {
	for _, fam := range familyList {
		if err := goError("deleting a metric family", C.TRITONSERVER_MetricFamilyDelete(fam)); err != nil {
			logf(logWarn, "react backend: %v", err)
		}
	}
	clear(families)
	familyList = nil
}

// modelMetrics are one model version's metrics, by count.
type modelMetrics struct {
	mu sync.Mutex
	m  map[model.Count]*C.TRITONSERVER_Metric
}

// count adds one to the metric of c, making it on first use. A failure is
// logged once per metric and the count lost; the request is not affected.
func (mm *modelMetrics) count(c model.Count) {
	fam := families[c.Metric]
	if fam == nil {
		return
	}
	mm.mu.Lock()
	defer mm.mu.Unlock()
	metric, ok := mm.m[c]
	if !ok {
		metric = newMetric(fam, c)
		if mm.m == nil {
			mm.m = map[model.Count]*C.TRITONSERVER_Metric{}
		}
		mm.m[c] = metric // nil after a failure: not tried again
	}
	if metric == nil {
		return
	}
	if e := C.TRITONSERVER_MetricIncrement(metric, 1); e != nil {
		C.TRITONSERVER_ErrorDelete(e)
	}
}

// newMetric makes the metric of c in fam, nil (logged) on failure.
func newMetric(fam *C.TRITONSERVER_MetricFamily, c model.Count) *C.TRITONSERVER_Metric {
	var names []string
	for _, f := range model.MetricFamilies {
		if f.Name == c.Metric {
			names = f.Labels
		}
	}
	values := c.Labels()
	n := len(values)
	cnames := (**C.char)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	cvalues := (**C.char)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	defer C.free(unsafe.Pointer(cnames))
	defer C.free(unsafe.Pointer(cvalues))
	ns, vs := unsafe.Slice(cnames, n), unsafe.Slice(cvalues, n)
	for i := range values {
		ns[i], vs[i] = C.CString(names[i]), C.CString(values[i])
	}
	var metric *C.TRITONSERVER_Metric
	err := goError("metric "+c.Metric, C.new_metric(&metric, fam, cnames, cvalues, C.uint64_t(n)))
	for i := range values {
		freeString(ns[i])
		freeString(vs[i])
	}
	if err != nil {
		logf(logWarn, "react model %s: %v: not counted", c.Model, err)
		return nil
	}
	return metric
}

// close deletes the model version's metrics.
func (mm *modelMetrics) close() {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	for c, metric := range mm.m {
		if metric != nil {
			if err := goError("deleting metric "+c.Metric, C.TRITONSERVER_MetricDelete(metric)); err != nil {
				logf(logWarn, "react model %s: %v", c.Model, err)
			}
		}
	}
	clear(mm.m)
}
