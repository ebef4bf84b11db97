package serve

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are a Server's Prometheus metrics, named after Triton's where
// they mean the same, on a registry of the Server's own (two servers in
// one process keep apart, and nothing is added to the global registry).
// The durations are cumulative counters in microseconds, as Triton's are:
// rate(duration) / rate(success) is the mean per request.
type metrics struct {
	reg *prometheus.Registry

	success, count, execCount     *prometheus.CounterVec
	failure                       *prometheus.CounterVec
	requestUS, queueUS, computeUS *prometheus.CounterVec
	pending                       *prometheus.GaugeVec
}

func newMetrics() *metrics {
	mv := []string{"model", "version"}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	m := &metrics{
		reg:       prometheus.NewRegistry(),
		success:   counter("nv_inference_request_success", "Number of successful inference requests, all batch sizes", mv...),
		failure:   counter("nv_inference_request_failure", "Number of failed inference requests, all batch sizes, by reason (REJECTED: queue full; UNAVAILABLE: not ready or shutting down; TIMEOUT: deadline passed; CANCELED: client gone; BAD_REQUEST, NOT_FOUND, TOO_LARGE: refused input; BACKEND: the model failed)", "model", "version", "reason"),
		count:     counter("nv_inference_count", "Number of inferences performed (a request of batch size n counts n)", mv...),
		execCount: counter("nv_inference_exec_count", "Number of model executions performed (one per dynamic batch); nv_inference_count / nv_inference_exec_count is the mean batch size", mv...),
		requestUS: counter("nv_inference_request_duration_us", "Cumulative inference request duration in microseconds, queue and compute included", mv...),
		queueUS:   counter("nv_inference_queue_duration_us", "Cumulative inference queuing duration in microseconds", mv...),
		computeUS: counter("nv_inference_compute_infer_duration_us", "Cumulative compute inference duration in microseconds (each request of a batch counts the batch's duration)", mv...),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nv_inference_pending_request_count",
			Help: "Instantaneous number of requests waiting in a model's queue"}, mv),
	}
	m.reg.MustRegister(m.success, m.failure, m.count, m.execCount, m.requestUS, m.queueUS, m.computeUS, m.pending,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// handler serves the registry in Prometheus' text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// forget drops a retired model version's series, so that a server whose
// versions come and go (polling) keeps no series for each one forever.
func (m *metrics) forget(model, version string) {
	l := prometheus.Labels{"model": model, "version": version}
	for _, v := range []*prometheus.CounterVec{m.success, m.failure, m.count, m.execCount, m.requestUS, m.queueUS, m.computeUS} {
		v.DeletePartialMatch(l)
	}
	m.pending.DeletePartialMatch(l)
}

// StatusClientClosedRequest is the status of a request whose client went
// away (its context was cancelled) before it was answered: nginx's 499.
// No client reads it; it labels the failure.
const StatusClientClosedRequest = 499

// reason is the failure label of an error, from its status.
func reason(err error) string {
	var e *Error
	if !errors.As(err, &e) {
		return "BACKEND"
	}
	switch e.Status {
	case http.StatusTooManyRequests:
		return "REJECTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "TIMEOUT"
	case StatusClientClosedRequest:
		return "CANCELED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusRequestEntityTooLarge:
		return "TOO_LARGE"
	}
	if e.Status >= 400 && e.Status < 500 {
		return "BAD_REQUEST"
	}
	return "BACKEND"
}
