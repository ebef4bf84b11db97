package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sporeml/spore/serve"
	"github.com/sporeml/spore/tensor"
)

// NewHTTP returns a Client for the HTTP/REST server at baseURL
// ("http://127.0.0.1:8000"; the /v2 paths are added to it). It sends
// tensors with Triton's binary-data extension unless WithJSON is given.
func NewHTTP(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: NewHTTP: %q is not an http:// or https:// URL of a server (want http://HOST:PORT)", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("client: NewHTTP: %q has a query or fragment; want the server's base URL", baseURL)
	}
	o := buildOptions(opts)
	return &Client{tr: &httpTransport{
		base: strings.TrimRight(u.String(), "/"),
		hc:   o.httpClient,
		json: o.json,
		max:  o.maxResponse,
	}}, nil
}

type httpTransport struct {
	base string
	hc   *http.Client
	json bool
	max  int64
}

// modelPath is the path of a model (version) resource.
func modelPath(model, version string) string {
	p := "/v2/models/" + url.PathEscape(model)
	if version != "" {
		p += "/versions/" + url.PathEscape(version)
	}
	return p
}

// do sends a request and reads the whole response, up to the size limit.
func (h *httpTransport) do(ctx context.Context, method, path string, body []byte, header http.Header) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, rd)
	if err != nil {
		return nil, nil, fmt.Errorf("client: %s %s: %v", method, path, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("client: %v", err) // names the method and URL
	}
	defer resp.Body.Close()
	if resp.ContentLength > h.max {
		return nil, nil, fmt.Errorf("client: %s %s: the response has %d bytes, more than the client's limit of %d", method, path, resp.ContentLength, h.max)
	}
	out, err := io.ReadAll(io.LimitReader(resp.Body, h.max+1))
	if err != nil {
		return nil, nil, fmt.Errorf("client: %s %s: reading the response: %v", method, path, err)
	}
	if int64(len(out)) > h.max {
		return nil, nil, fmt.Errorf("client: %s %s: the response is larger than the client's limit of %d bytes", method, path, h.max)
	}
	return resp, out, nil
}

// answerError is the *Error for a response that is not a success: the
// message of its {"error": "..."} body, or the body itself.
func answerError(resp *http.Response, body []byte) error {
	var e struct {
		Error *string `json:"error"`
	}
	msg := ""
	if json.Unmarshal(body, &e) == nil && e.Error != nil {
		msg = *e.Error
	} else {
		msg = strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		if msg == "" {
			msg = "(no message)"
		}
	}
	return httpError(resp.StatusCode, msg)
}

func ok(resp *http.Response) bool { return resp.StatusCode/100 == 2 }

// health asks a yes-or-no endpoint: 2xx is yes, 503 is no, anything
// else an error.
func (h *httpTransport) health(ctx context.Context, path string) (bool, error) {
	resp, body, err := h.do(ctx, http.MethodGet, path, nil, nil)
	switch {
	case err != nil:
		return false, err
	case ok(resp):
		return true, nil
	case resp.StatusCode == http.StatusServiceUnavailable:
		return false, nil
	}
	return false, answerError(resp, body)
}

func (h *httpTransport) close() error {
	h.hc.CloseIdleConnections()
	return nil
}

func (h *httpTransport) live(ctx context.Context) (bool, error) {
	return h.health(ctx, "/v2/health/live")
}

func (h *httpTransport) ready(ctx context.Context) (bool, error) {
	return h.health(ctx, "/v2/health/ready")
}

func (h *httpTransport) modelReady(ctx context.Context, model, version string) (bool, error) {
	return h.health(ctx, modelPath(model, version)+"/ready")
}

// getJSON GETs path and decodes its JSON body into v.
func (h *httpTransport) getJSON(ctx context.Context, path string, v any) error {
	resp, body, err := h.do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return err
	}
	if !ok(resp) {
		return answerError(resp, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("client: GET %s: the response is not the protocol's JSON: %v", path, err)
	}
	return nil
}

func (h *httpTransport) serverMetadata(ctx context.Context) (serve.ServerMetadata, error) {
	var m serve.ServerMetadata
	err := h.getJSON(ctx, "/v2", &m)
	return m, err
}

func (h *httpTransport) modelMetadata(ctx context.Context, model, version string) (serve.ModelMetadata, error) {
	var m serve.ModelMetadata
	err := h.getJSON(ctx, modelPath(model, version), &m)
	return m, err
}

// post POSTs a JSON body to path and returns the response body.
func (h *httpTransport) post(ctx context.Context, path string, body []byte) ([]byte, error) {
	resp, out, err := h.do(ctx, http.MethodPost, path, body, http.Header{"Content-Type": {"application/json"}})
	if err != nil {
		return nil, err
	}
	if !ok(resp) {
		return nil, answerError(resp, out)
	}
	return out, nil
}

func (h *httpTransport) index(ctx context.Context, readyOnly bool) ([]serve.IndexEntry, error) {
	body := []byte(`{}`)
	if readyOnly {
		body = []byte(`{"ready":true}`)
	}
	out, err := h.post(ctx, "/v2/repository/index", body)
	if err != nil {
		return nil, err
	}
	var idx []serve.IndexEntry
	if err := json.Unmarshal(out, &idx); err != nil {
		return nil, fmt.Errorf("client: POST /v2/repository/index: the response is not the protocol's JSON: %v", err)
	}
	return idx, nil
}

func (h *httpTransport) load(ctx context.Context, model string) error {
	_, err := h.post(ctx, "/v2/repository/models/"+url.PathEscape(model)+"/load", nil)
	return err
}

func (h *httpTransport) unload(ctx context.Context, model string) error {
	_, err := h.post(ctx, "/v2/repository/models/"+url.PathEscape(model)+"/unload", nil)
	return err
}

// The JSON forms of an inference request and response.
type (
	jsonInput struct {
		Name       string          `json:"name"`
		Datatype   string          `json:"datatype"`
		Shape      []int64         `json:"shape"`
		Parameters map[string]any  `json:"parameters,omitempty"`
		Data       json.RawMessage `json:"data,omitempty"`
	}
	jsonRequestedOutput struct {
		Name       string         `json:"name"`
		Parameters map[string]any `json:"parameters,omitempty"`
	}
	jsonRequest struct {
		Parameters map[string]any        `json:"parameters,omitempty"`
		Inputs     []jsonInput           `json:"inputs"`
		Outputs    []jsonRequestedOutput `json:"outputs,omitempty"`
	}
	jsonOutput struct {
		Name       string          `json:"name"`
		Datatype   string          `json:"datatype"`
		Shape      []int64         `json:"shape"`
		Parameters map[string]any  `json:"parameters"`
		Data       json.RawMessage `json:"data"`
	}
	jsonResponse struct {
		ModelName    string       `json:"model_name"`
		ModelVersion string       `json:"model_version"`
		ID           string       `json:"id"`
		Outputs      []jsonOutput `json:"outputs"`
	}
)

// infer sends a request as a JSON header followed by the inputs' raw
// bytes (the binary-data extension), or as JSON only with WithJSON.
func (h *httpTransport) infer(ctx context.Context, model, version string, inputs []Input, outputs []string) (*Result, error) {
	path := modelPath(model, version) + "/infer"
	req := jsonRequest{Inputs: make([]jsonInput, len(inputs))}
	var raw []byte
	if !h.json {
		n := 0
		for _, in := range inputs {
			n += in.Tensor.Size() * in.Tensor.DType().Size()
		}
		raw = make([]byte, 0, n)
	}
	for i, in := range inputs {
		t := in.Tensor
		ji := jsonInput{Name: in.Name, Datatype: serve.Datatype(t.DType()), Shape: shapeOf(t)}
		if h.json {
			ji.Data = appendJSONData(nil, t)
		} else {
			before := len(raw)
			raw = serve.AppendRaw(raw, t)
			ji.Parameters = map[string]any{"binary_data_size": len(raw) - before}
		}
		req.Inputs[i] = ji
	}
	for _, name := range outputs {
		o := jsonRequestedOutput{Name: name}
		if !h.json {
			o.Parameters = map[string]any{"binary_data": true}
		}
		req.Outputs = append(req.Outputs, o)
	}
	params := map[string]any{}
	if !h.json && len(outputs) == 0 {
		params["binary_data_output"] = true
	}
	if d, ok := ctx.Deadline(); ok {
		// The server's deadline is the client's: a request the client
		// has given up on is dropped from the server's queue.
		params["timeout"] = max(time.Until(d).Microseconds(), 1)
	}
	if len(params) > 0 {
		req.Parameters = params
	}
	head, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("client: encoding the request: %v", err)
	}
	hdr := http.Header{}
	body := head
	if h.json {
		hdr.Set("Content-Type", "application/json")
	} else {
		hdr.Set("Content-Type", "application/octet-stream")
		hdr.Set("Inference-Header-Content-Length", strconv.Itoa(len(head)))
		body = append(head, raw...)
	}
	resp, out, err := h.do(ctx, http.MethodPost, path, body, hdr)
	if err != nil {
		return nil, err
	}
	if !ok(resp) {
		return nil, answerError(resp, out)
	}
	return h.decodeResponse(path, resp, out)
}

// decodeResponse decodes an inference response, JSON or JSON plus binary
// data; every output's declared shape is checked before its tensor is
// allocated.
func (h *httpTransport) decodeResponse(path string, resp *http.Response, body []byte) (*Result, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("client: POST %s: the server's response: %s", path, fmt.Sprintf(format, args...))
	}
	head, bin := body, []byte(nil)
	if v := resp.Header.Get("Inference-Header-Content-Length"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 || n > len(body) {
			return nil, bad("Inference-Header-Content-Length %q does not fit a body of %d bytes", v, len(body))
		}
		head, bin = body[:n], body[n:]
	}
	var jr jsonResponse
	if err := json.Unmarshal(head, &jr); err != nil {
		return nil, bad("not the protocol's JSON: %v", err)
	}
	res := &Result{Model: jr.ModelName, Version: jr.ModelVersion, ID: jr.ID}
	for _, o := range jr.Outputs {
		what := fmt.Sprintf("output %q", o.Name)
		var t *tensor.Tensor
		var err error
		if v, isBin := o.Parameters["binary_data_size"]; isBin {
			f, isNum := v.(float64)
			if !isNum || f < 0 || f != math.Trunc(f) || f > float64(len(bin)) {
				return nil, bad("%s has binary_data_size %v, but %d bytes of binary data are left", what, v, len(bin))
			}
			n := int(f)
			t, err = serve.FromRaw(what, o.Datatype, o.Shape, bin[:n], h.max)
			bin = bin[n:]
		} else {
			t, err = decodeJSONData(what, o.Datatype, o.Shape, o.Data, h.max)
		}
		if err != nil {
			return nil, bad("%v", err)
		}
		res.Outputs = append(res.Outputs, Output{Name: o.Name, Datatype: o.Datatype, Shape: o.Shape, Tensor: t})
	}
	if len(bin) > 0 {
		return nil, bad("%d bytes of binary data belong to no output", len(bin))
	}
	return res, nil
}

// appendJSONData appends t's elements as a flat JSON array. JSON has no
// NaN or infinities; they go as the strings "NaN", "Infinity" and
// "-Infinity", which spore's server reads back.
func appendJSONData(b []byte, t *tensor.Tensor) []byte {
	b = append(b, '[')
	sep := func(i int) {
		if i > 0 {
			b = append(b, ',')
		}
	}
	float := func(f float64, bits int) {
		switch {
		case math.IsNaN(f):
			b = append(b, `"NaN"`...)
		case math.IsInf(f, 1):
			b = append(b, `"Infinity"`...)
		case math.IsInf(f, -1):
			b = append(b, `"-Infinity"`...)
		default:
			b = strconv.AppendFloat(b, f, 'g', -1, bits)
		}
	}
	switch d := t.Data().(type) {
	case []float32:
		for i, v := range d {
			sep(i)
			float(float64(v), 32)
		}
	case []float64:
		for i, v := range d {
			sep(i)
			float(v, 64)
		}
	case []tensor.F16:
		for i, v := range d {
			sep(i)
			float(float64(v.Float32()), 32)
		}
	case []tensor.BF16:
		for i, v := range d {
			sep(i)
			float(float64(v.Float32()), 32)
		}
	case []int32:
		for i, v := range d {
			sep(i)
			b = strconv.AppendInt(b, int64(v), 10)
		}
	case []int64:
		for i, v := range d {
			sep(i)
			b = strconv.AppendInt(b, v, 10)
		}
	case []uint8:
		for i, v := range d {
			sep(i)
			b = strconv.AppendUint(b, uint64(v), 10)
		}
	case []bool:
		for i, v := range d {
			sep(i)
			b = strconv.AppendBool(b, v)
		}
	}
	return append(b, ']')
}

// decodeJSONData decodes an output's "data", flat or nested as its
// shape, after checking the shape.
func decodeJSONData(what, datatype string, shape []int64, data json.RawMessage, limit int64) (*tensor.Tensor, error) {
	dt, err := serve.DTypeOf(datatype)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	n, err := serve.Elements(what, shape, limit)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%s has neither data nor binary_data_size", what)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: data: %v", what, err)
	}
	flat := make([]any, 0, n)
	var flatten func(v any)
	flatten = func(v any) {
		if a, ok := v.([]any); ok {
			for _, e := range a {
				flatten(e)
			}
			return
		}
		flat = append(flat, v)
	}
	flatten(v)
	if len(flat) != n {
		return nil, fmt.Errorf("%s: %s%v needs %d elements, data has %d", what, datatype, shape, n, len(flat))
	}
	dims := make([]int, len(shape))
	for i, d := range shape {
		dims[i] = int(d)
	}
	t := tensor.New(dt, dims...)
	elemErr := func(i int, e any) error {
		return fmt.Errorf("%s: element %d, %v, is not a %s value", what, i, e, datatype)
	}
	floatOf := func(i int, e any) (float64, error) {
		switch e := e.(type) {
		case json.Number:
			f, err := strconv.ParseFloat(string(e), 64)
			if err == nil {
				return f, nil
			}
		case string:
			switch e {
			case "NaN", "nan":
				return math.NaN(), nil
			case "Infinity", "inf", "Inf":
				return math.Inf(1), nil
			case "-Infinity", "-inf", "-Inf":
				return math.Inf(-1), nil
			}
		}
		return 0, elemErr(i, e)
	}
	intOf := func(i int, e any, lo, hi int64) (int64, error) {
		if num, isNum := e.(json.Number); isNum {
			if v, err := strconv.ParseInt(string(num), 10, 64); err == nil && v >= lo && v <= hi {
				return v, nil
			}
		}
		return 0, elemErr(i, e)
	}
	switch d := t.Data().(type) {
	case []float32:
		for i, e := range flat {
			f, err := floatOf(i, e)
			if err != nil {
				return nil, err
			}
			d[i] = float32(f)
		}
	case []float64:
		for i, e := range flat {
			if d[i], err = floatOf(i, e); err != nil {
				return nil, err
			}
		}
	case []tensor.F16:
		for i, e := range flat {
			f, err := floatOf(i, e)
			if err != nil {
				return nil, err
			}
			d[i] = tensor.F16From(float32(f))
		}
	case []tensor.BF16:
		for i, e := range flat {
			f, err := floatOf(i, e)
			if err != nil {
				return nil, err
			}
			d[i] = tensor.BF16From(float32(f))
		}
	case []int32:
		for i, e := range flat {
			v, err := intOf(i, e, math.MinInt32, math.MaxInt32)
			if err != nil {
				return nil, err
			}
			d[i] = int32(v)
		}
	case []int64:
		for i, e := range flat {
			if d[i], err = intOf(i, e, math.MinInt64, math.MaxInt64); err != nil {
				return nil, err
			}
		}
	case []uint8:
		for i, e := range flat {
			v, err := intOf(i, e, 0, math.MaxUint8)
			if err != nil {
				return nil, err
			}
			d[i] = uint8(v)
		}
	case []bool:
		for i, e := range flat {
			b, isBool := e.(bool)
			if !isBool {
				return nil, elemErr(i, e)
			}
			d[i] = b
		}
	}
	return t, nil
}
