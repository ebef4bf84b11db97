package serve

import (
	"compress/flate"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

// NewHTTPHandler returns the HTTP/REST front end of the Open Inference
// Protocol (KServe v2, as Triton speaks it) serving b:
//
//	GET  /v2/health/live, /v2/health/ready           200, or 503
//	GET  /v2                                         server metadata
//	GET  /v2/models/{m}[/versions/{v}]               model metadata
//	GET  /v2/models/{m}[/versions/{v}]/ready         200, or the model's error
//	POST /v2/models/{m}[/versions/{v}]/infer         inference
//	POST /v2/repository/index                        the repository index
//	POST /v2/repository/models/{m}/load, .../unload  model control
//
// An inference request carries its tensors as JSON ("data", flat or
// nested as the shape) or, with Triton's binary-data extension, as raw
// little-endian bytes after a JSON header whose length the
// Inference-Header-Content-Length header gives. Outputs asked for with
// parameters.binary_data (or the request parameter binary_data_output)
// come back the same way. A request body may be compressed with gzip or
// deflate (Content-Encoding); responses are not. A float output's NaN and
// infinities, which JSON cannot hold, are written as the strings "NaN",
// "Infinity" and "-Infinity", and read back from them.
//
// The handler routes every path itself, and expects the request path as
// the client sent it: mount it at "/" (not under an http.ServeMux pattern
// that would clean or redirect paths first).
//
// Every error is answered {"error": "..."} with the status of the
// backend's *Error (400 for a bad request, 404 for an unknown model, 413
// for a body over lim.MaxBodyBytes, 429 or 503 when overloaded, 504 when
// the deadline passed). An inference request refused before it reaches
// b.Infer is counted with b.Reject. The request's deadline is its
// "timeout" parameter (microseconds, as Triton takes it) or
// lim.DefaultTimeout, within the client's own context: a client that goes
// away cancels its request.
//
// The handler does not serve /metrics: the server that mounts it does.
func NewHTTPHandler(b Backend, lim Limits) http.Handler {
	return &httpHandler{b: b, lim: lim.WithDefaults()}
}

// httpHandler is NewHTTPHandler's handler. It routes by hand rather than
// through http.ServeMux so that every miss is answered in the protocol's
// JSON error form, and so that a model name is unescaped and checked in
// one place.
type httpHandler struct {
	b   Backend
	lim Limits
}

// httpBufPool holds the buffers that request bodies are read into and
// responses are encoded into. Buffers that grew past httpMaxPooled are left to
// the collector, so that one large request does not pin its memory.
var httpBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

const httpMaxPooled = 4 << 20

func httpGetBuf() *[]byte { return httpBufPool.Get().(*[]byte) }

func httpPutBuf(b *[]byte) {
	if cap(*b) <= httpMaxPooled {
		*b = (*b)[:0]
		httpBufPool.Put(b)
	}
}

// ServeHTTP routes a request to its endpoint. A panic below it is
// answered 500 and logged, as a last resort: the backend and decoders
// return errors.
func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			// The client learns that the server failed, not how: the
			// panic and its stack go to the server's log.
			log.Printf("serve: internal error serving %s %s: %v\n%s", r.Method, r.URL.Path, p, debug.Stack())
			h.writeError(w, errorf(http.StatusInternalServerError, "internal server error while serving %s %s", r.Method, r.URL.Path))
		}
	}()
	seg, err := httpPathSegments(r.URL)
	if err != nil {
		h.writeError(w, err)
		return
	}
	if len(seg) == 0 || seg[0] != "v2" {
		h.notFound(w, r)
		return
	}
	seg = seg[1:]
	switch {
	case len(seg) == 0:
		if h.method(w, r, http.MethodGet) {
			h.writeJSON(w, http.StatusOK, h.serverMetadata())
		}
	case seg[0] == "health" && len(seg) == 2 && (seg[1] == "live" || seg[1] == "ready"):
		if !h.method(w, r, http.MethodGet) {
			return
		}
		ok, what := h.b.Live(), "live"
		if seg[1] == "ready" {
			ok, what = h.b.Ready(), "ready"
		}
		if ok {
			w.WriteHeader(http.StatusOK)
		} else {
			h.writeError(w, errorf(http.StatusServiceUnavailable, "the server is not %s", what))
		}
	case seg[0] == "models" && len(seg) >= 2:
		h.model(w, r, seg[1:])
	case seg[0] == "repository":
		h.repository(w, r, seg[1:])
	default:
		h.notFound(w, r)
	}
}

// httpPathSegments splits the request path into unescaped segments. A
// segment that unescapes to something with a '/' (a model name "a%2Fb")
// is refused, so that a model name is always one segment.
func httpPathSegments(u *url.URL) ([]string, error) {
	p := strings.TrimPrefix(u.EscapedPath(), "/")
	if p == "" {
		return nil, nil
	}
	seg := strings.Split(p, "/")
	for i, s := range seg {
		if !strings.Contains(s, "%") {
			continue
		}
		v, err := url.PathUnescape(s)
		if err != nil || strings.ContainsAny(v, "/\\") {
			return nil, errorf(http.StatusBadRequest, "path segment %q is not a valid name", s)
		}
		seg[i] = v
	}
	return seg, nil
}

// checkPathName refuses a model name or version that could not name a
// directory of the repository: empty, "." or "..", or holding a
// separator or control character. The backend checks names itself; this
// answers the obvious cases with a clear message at the door.
func checkPathName(kind, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\") || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return errorf(http.StatusBadRequest, "%s name %q is not valid", kind, name)
	}
	return nil
}

// model serves /v2/models/{m}...; seg starts at the model name.
func (h *httpHandler) model(w http.ResponseWriter, r *http.Request, seg []string) {
	name, version, versioned := seg[0], "", false
	seg = seg[1:]
	if len(seg) >= 2 && seg[0] == "versions" {
		version, versioned = seg[1], true
		seg = seg[2:]
	}
	action := ""
	switch {
	case len(seg) == 0:
	case len(seg) == 1 && (seg[0] == "ready" || seg[0] == "infer"):
		action = seg[0]
	default:
		h.notFound(w, r)
		return
	}
	err := checkPathName("model", name)
	if err == nil && versioned {
		err = checkPathName("version", version)
	}
	if action == "infer" {
		if err != nil {
			h.refuse(w, name, version, err)
			return
		}
		h.infer(w, r, name, version)
		return
	}
	if err != nil {
		h.writeError(w, err)
		return
	}
	if !h.method(w, r, http.MethodGet) {
		return
	}
	if action == "ready" {
		if err := h.b.ModelReady(name, version); err != nil {
			h.writeError(w, err)
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	md, err := h.b.ModelMetadata(name, version)
	if err != nil {
		h.writeError(w, err)
		return
	}
	if md.Inputs == nil {
		md.Inputs = []TensorMetadata{}
	}
	if md.Outputs == nil {
		md.Outputs = []TensorMetadata{}
	}
	h.writeJSON(w, http.StatusOK, md)
}

// serverMetadata is the backend's, with empty lists written as [].
func (h *httpHandler) serverMetadata() ServerMetadata {
	md := h.b.ServerMetadata()
	if md.Extensions == nil {
		md.Extensions = []string{}
	}
	return md
}

// repository serves /v2/repository/...; seg starts after "repository".
func (h *httpHandler) repository(w http.ResponseWriter, r *http.Request, seg []string) {
	switch {
	case len(seg) == 1 && seg[0] == "index":
		if !h.method(w, r, http.MethodPost) {
			return
		}
		var body struct {
			Ready *bool `json:"ready"`
		}
		if err := h.smallJSON(w, r, &body); err != nil {
			h.writeError(w, err)
			return
		}
		idx := h.b.Index(body.Ready != nil && *body.Ready)
		if idx == nil {
			idx = []IndexEntry{}
		}
		h.writeJSON(w, http.StatusOK, idx)
	case len(seg) == 3 && seg[0] == "models" && (seg[2] == "load" || seg[2] == "unload"):
		if !h.method(w, r, http.MethodPost) {
			return
		}
		name := seg[1]
		if err := checkPathName("model", name); err != nil {
			h.writeError(w, err)
			return
		}
		var body struct {
			Parameters map[string]any `json:"parameters"`
		}
		if err := h.smallJSON(w, r, &body); err != nil {
			h.writeError(w, err)
			return
		}
		// Triton's load takes a config override and model files as
		// parameters; this server loads only what the repository holds,
		// and says so rather than ignoring them.
		for k := range body.Parameters {
			if seg[2] == "unload" && k == "unload_dependents" {
				continue
			}
			h.writeError(w, errorf(http.StatusBadRequest, "%s parameter %q is not supported by this server", seg[2], k))
			return
		}
		var err error
		if seg[2] == "load" {
			err = h.b.Load(name)
		} else {
			err = h.b.Unload(name)
		}
		if err != nil {
			h.writeError(w, err)
			return
		}
		w.WriteHeader(http.StatusOK)
	default:
		h.notFound(w, r)
	}
}

// smallJSON decodes the optional JSON body of a repository request into
// v; an empty body leaves v as it is. These bodies are small and rare, so
// encoding/json decodes them, after the depth check.
func (h *httpHandler) smallJSON(w http.ResponseWriter, r *http.Request, v any) error {
	bp := httpGetBuf()
	defer httpPutBuf(bp)
	body, err := h.readBody(w, r, bp)
	if err != nil {
		return err
	}
	s := &jsonScanner{buf: body, maxDepth: h.lim.MaxJSONDepth}
	if s.ws() == 0 {
		return nil
	}
	if s.ws() != '{' {
		return s.fail("the body must be a JSON object, found %s", s.describe())
	}
	if err := s.skip(); err != nil {
		return err
	}
	if err := s.end(); err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errorf(http.StatusBadRequest, "request JSON: %v", err)
	}
	return nil
}

// readBody reads the request body into *bp, up to lim.MaxBodyBytes. A
// body compressed with gzip or deflate (Content-Encoding, as Triton's
// clients send with request compression) is decompressed, and the limit
// holds for it both as sent and decompressed, so that a small body that
// inflates enormously is refused.
func (h *httpHandler) readBody(w http.ResponseWriter, r *http.Request, bp *[]byte) ([]byte, error) {
	max := h.lim.MaxBodyBytes
	if r.ContentLength > max {
		return nil, errorf(http.StatusRequestEntityTooLarge, "the request body has %d bytes, more than this server's limit of %d bytes", r.ContentLength, max)
	}
	buf := *bp
	var rd io.Reader = http.MaxBytesReader(w, r.Body, max)
	switch ce := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); ce {
	case "", "identity":
		if n := int(r.ContentLength); n > cap(buf) {
			buf = make([]byte, 0, n)
		}
	case "gzip":
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return nil, httpBodyError(r, err, max, "gzip")
		}
		rd = &inflateLimitReader{r: zr, left: max}
	case "deflate":
		rd = &inflateLimitReader{r: flate.NewReader(rd), left: max}
	default:
		return nil, errorf(http.StatusUnsupportedMediaType, "Content-Encoding %q is not supported by this server; send the body uncompressed, or as gzip or deflate", ce)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			*bp = buf
			return nil, httpBodyError(r, err, max, r.Header.Get("Content-Encoding"))
		}
	}
	*bp = buf
	return buf, nil
}

// errHTTPInflated is inflateLimitReader's error for a body that decompresses past
// the limit.
var errHTTPInflated = errors.New("decompressed body over the limit")

// inflateLimitReader reads from r and fails with errHTTPInflated past left bytes.
type inflateLimitReader struct {
	r    io.Reader
	left int64
}

func (l *inflateLimitReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if l.left -= int64(n); l.left < 0 {
		return n, errHTTPInflated
	}
	return n, err
}

// httpBodyError turns an error reading a body into the error answered.
func httpBodyError(r *http.Request, err error, max int64, encoding string) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return errorf(http.StatusRequestEntityTooLarge, "the request body is larger than this server's limit of %d bytes", max)
	case errors.Is(err, errHTTPInflated):
		return errorf(http.StatusRequestEntityTooLarge, "the request body decompresses to more than this server's limit of %d bytes", max)
	case r.Context().Err() != nil:
		return errorf(http.StatusBadRequest, "the client went away while sending the request body")
	case encoding != "":
		return errorf(http.StatusBadRequest, "the request body is not valid %s: %v", encoding, err)
	}
	return errorf(http.StatusBadRequest, "reading the request body: %v", err)
}

// infer serves POST /v2/models/{m}[/versions/{v}]/infer.
func (h *httpHandler) infer(w http.ResponseWriter, r *http.Request, model, version string) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.refuse(w, model, version, errorf(http.StatusMethodNotAllowed, "%s takes POST, not %s", r.URL.Path, r.Method))
		return
	}
	withdraw := h.b.Expect(model, version)
	defer withdraw()
	jsonLen := -1
	if v := r.Header.Get("Inference-Header-Content-Length"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			h.refuse(w, model, version, errorf(http.StatusBadRequest, "Inference-Header-Content-Length %q is not a length in bytes", v))
			return
		}
		jsonLen = n
	}
	bp := httpGetBuf()
	defer httpPutBuf(bp)
	body, err := h.readBody(w, r, bp)
	if err != nil {
		h.refuse(w, model, version, err)
		return
	}
	req, opt, err := decodeInferRequest(body, jsonLen, model, version, h.lim)
	if err != nil {
		h.refuse(w, model, version, err)
		return
	}
	timeout := h.lim.DefaultTimeout
	if opt.timeout > 0 {
		timeout = opt.timeout
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	req.Arrived = withdraw
	resp, err := h.b.Infer(ctx, req)
	if err == nil && resp == nil {
		err = errorf(http.StatusInternalServerError, "the server produced no response")
	}
	if err != nil {
		var e *Error
		switch {
		case errors.As(err, &e):
		case r.Context().Err() != nil:
			// The client went away (or the server stopped this request):
			// the answer is most likely written to no one.
			err = errorf(http.StatusServiceUnavailable, "model %q: the request was cancelled before it was answered", model)
		case errors.Is(err, context.DeadlineExceeded):
			err = errorf(http.StatusGatewayTimeout, "model %q: the request's deadline (%v) passed before it was answered", model, timeout)
		}
		h.writeError(w, err)
		return
	}
	out, jsonLen, binary, err := appendInferResponse((*bp)[:0], resp, req, opt)
	*bp = out
	if err != nil {
		h.writeError(w, err)
		return
	}
	hd := w.Header()
	if binary {
		hd.Set("Content-Type", "application/octet-stream")
		hd.Set("Inference-Header-Content-Length", strconv.Itoa(jsonLen))
	} else {
		hd.Set("Content-Type", "application/json")
	}
	hd.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

// refuse answers an inference request refused before it reached the
// backend's Infer, and counts it there.
func (h *httpHandler) refuse(w http.ResponseWriter, model, version string, err error) {
	h.b.Reject(model, version, err)
	h.writeError(w, err)
}

// method reports whether r uses method (GET also answers HEAD), and
// answers 405 when it does not.
func (h *httpHandler) method(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method || method == http.MethodGet && r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", method)
	h.writeError(w, errorf(http.StatusMethodNotAllowed, "%s takes %s, not %s", r.URL.Path, method, r.Method))
	return false
}

func (h *httpHandler) notFound(w http.ResponseWriter, r *http.Request) {
	h.writeError(w, errorf(http.StatusNotFound, "no endpoint %s %s in the Open Inference Protocol (see GET /v2 for this server)", r.Method, r.URL.Path))
}

// writeError answers err as {"error": "..."} with its status.
func (h *httpHandler) writeError(w http.ResponseWriter, err error) {
	status := StatusOf(err)
	if status < 400 || status > 599 {
		status = http.StatusInternalServerError
	}
	bp := httpGetBuf()
	defer httpPutBuf(bp)
	b := appendJSONError((*bp)[:0], err.Error())
	*bp = b
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	hd.Del("Inference-Header-Content-Length")
	w.WriteHeader(status)
	w.Write(b)
}

// writeJSON answers v, a small metadata value, as JSON.
func (h *httpHandler) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		h.writeError(w, errorf(http.StatusInternalServerError, "encoding the response: %v", err))
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}
