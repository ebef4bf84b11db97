package serve

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sporeml/spore/tensor"
)

// httpTestServer starts the handler over a fake backend on a loopback
// httptest.Server.
func httpTestServer(t *testing.T, lim Limits) (*httptest.Server, *httpFake) {
	t.Helper()
	f := newHTTPFake()
	srv := httptest.NewServer(NewHTTPHandler(f, lim))
	t.Cleanup(srv.Close)
	return srv, f
}

// httpDo sends one request and returns the status, headers and body.
func httpDo(t *testing.T, srv *httptest.Server, method, path string, hdr map[string]string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// httpErrorOf returns the message of an {"error": ...} body, failing the test
// when the body is not one.
func httpErrorOf(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error *string `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error == nil {
		t.Fatalf("body %q is not {\"error\": ...}", body)
	}
	return *e.Error
}

func TestHTTPHealthAndMetadata(t *testing.T) {
	srv, f := httpTestServer(t, Limits{})
	tests := []struct {
		name, method, path string
		live, ready        bool
		status             int
		// body is a JSON value the response must equal, or, for an
		// error, a piece of its message.
		body string
	}{
		{"live", "GET", "/v2/health/live", true, true, 200, ""},
		{"not live", "GET", "/v2/health/live", false, false, 503, "not live"},
		{"ready", "GET", "/v2/health/ready", true, true, 200, ""},
		{"not ready", "GET", "/v2/health/ready", true, false, 503, "not ready"},
		{"head live", "HEAD", "/v2/health/live", true, true, 200, ""},
		{"post live", "POST", "/v2/health/live", true, true, 405, ""},
		{"server metadata", "GET", "/v2", true, true, 200, `{"name":"fake","version":"0.0.1","extensions":["binary_tensor_data","model_repository"]}`},
		{"model metadata", "GET", "/v2/models/double", true, true, 200,
			`{"name":"double","versions":["1","2"],"platform":"spore","inputs":[{"name":"x","datatype":"FP32","shape":[-1,4]}],"outputs":[{"name":"x_2x","datatype":"FP32","shape":[-1,4]}]}`},
		{"version metadata", "GET", "/v2/models/double/versions/1", true, true, 200,
			`{"name":"double","versions":["1","2"],"platform":"spore","inputs":[{"name":"x","datatype":"FP32","shape":[-1,4]}],"outputs":[{"name":"x_2x","datatype":"FP32","shape":[-1,4]}]}`},
		{"unknown model metadata", "GET", "/v2/models/nope", true, true, 404, `unknown model "nope"`},
		{"unknown version metadata", "GET", "/v2/models/double/versions/7", true, true, 404, `no version "7"`},
		{"model ready", "GET", "/v2/models/double/ready", true, true, 200, ""},
		{"version ready", "GET", "/v2/models/double/versions/2/ready", true, true, 200, ""},
		{"model not ready", "GET", "/v2/models/sleepy/ready", true, true, 503, "not ready"},
		{"unknown model ready", "GET", "/v2/models/nope/ready", true, true, 404, "unknown model"},
		{"unknown endpoint", "GET", "/v2/models/double/config", true, true, 404, "no endpoint GET /v2/models/double/config"},
		{"not v2", "GET", "/v1/models", true, true, 404, "no endpoint"},
		{"root", "GET", "/", true, true, 404, "no endpoint"},
		{"escaped slash in a name", "GET", "/v2/models/a%2F..%2Fb/ready", true, true, 400, "not a valid name"},
		{"dot dot", "GET", "/v2/models/../ready", true, true, 400, `model name ".." is not valid`},
		{"escaped dot dot", "GET", "/v2/models/%2e%2e/ready", true, true, 400, `model name ".." is not valid`},
		{"empty model name", "GET", "/v2/models//ready", true, true, 400, `model name "" is not valid`},
		{"empty version", "GET", "/v2/models/double/versions//ready", true, true, 400, `version name "" is not valid`},
		{"metadata by POST", "POST", "/v2", true, true, 405, "takes GET, not POST"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.live, f.ready = tc.live, tc.ready
			status, _, body := httpDo(t, srv, tc.method, tc.path, nil, nil)
			if status != tc.status {
				t.Fatalf("status %d, want %d (body %q)", status, tc.status, body)
			}
			switch {
			case tc.method == "HEAD":
			case status >= 400:
				if msg := httpErrorOf(t, body); !strings.Contains(msg, tc.body) {
					t.Errorf("error %q does not say %q", msg, tc.body)
				}
			case tc.body == "":
				if len(body) != 0 {
					t.Errorf("body %q, want none", body)
				}
			default:
				if !httpJSONEqual(t, body, []byte(tc.body)) {
					t.Errorf("body %s, want %s", body, tc.body)
				}
			}
		})
	}
	if r := f.takeRejects(); len(r) != 0 {
		t.Errorf("requests that are not inferences were counted as rejected: %v", r)
	}
}

// httpJSONEqual compares two JSON texts as values.
func httpJSONEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%q: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}

func TestHTTPRepository(t *testing.T) {
	srv, _ := httpTestServer(t, Limits{})
	tests := []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"index", "POST", "/v2/repository/index", "", 200, `[{"name":"double","version":"1","state":"READY"},{"name":"sleepy","version":"1","state":"UNAVAILABLE"}]`},
		{"index ready only", "POST", "/v2/repository/index", `{"ready": true}`, 200, `[{"name":"double","version":"1","state":"READY"}]`},
		{"index not ready", "POST", "/v2/repository/index", `{"ready": false, "other": 1}`, 200, `[{"name":"double","version":"1","state":"READY"},{"name":"sleepy","version":"1","state":"UNAVAILABLE"}]`},
		{"index bad body", "POST", "/v2/repository/index", `{"ready": tru}`, 400, "request JSON"},
		{"index wrong type", "POST", "/v2/repository/index", `{"ready": "yes"}`, 400, "request JSON"},
		{"index not an object", "POST", "/v2/repository/index", `[]`, 400, "must be a JSON object"},
		{"index by GET", "GET", "/v2/repository/index", "", 405, "takes POST"},
		{"load", "POST", "/v2/repository/models/sleepy/load", "", 200, ""},
		{"index after load", "POST", "/v2/repository/index", `{"ready": true}`, 200, `[{"name":"double","version":"1","state":"READY"},{"name":"sleepy","version":"1","state":"READY"}]`},
		{"unload", "POST", "/v2/repository/models/sleepy/unload", `{}`, 200, ""},
		{"unload dependents", "POST", "/v2/repository/models/sleepy/unload", `{"parameters":{"unload_dependents":true}}`, 200, ""},
		{"index after unload", "POST", "/v2/repository/index", `{"ready": true}`, 200, `[{"name":"double","version":"1","state":"READY"}]`},
		{"load unknown", "POST", "/v2/repository/models/nope/load", "", 404, `unknown model "nope"`},
		{"unload unknown", "POST", "/v2/repository/models/nope/unload", "", 404, `unknown model "nope"`},
		{"load with a config", "POST", "/v2/repository/models/double/load", `{"parameters":{"config":"{}"}}`, 400, `load parameter "config" is not supported`},
		{"load deep body", "POST", "/v2/repository/models/double/load", strings.Repeat("[", 100000), 400, "must be a JSON object"},
		{"load deep object", "POST", "/v2/repository/models/double/load", `{"a":` + strings.Repeat("[", 100000), 400, "nested deeper than 64"},
		{"load bad name", "POST", "/v2/repository/models/..%2Fetc/load", "", 400, "not a valid name"},
		{"repository unknown", "POST", "/v2/repository/models/double/reload", "", 404, "no endpoint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := httpDo(t, srv, tc.method, tc.path, nil, []byte(tc.body))
			if status != tc.status {
				t.Fatalf("status %d, want %d (body %q)", status, tc.status, body)
			}
			switch {
			case status >= 400:
				if msg := httpErrorOf(t, body); !strings.Contains(msg, tc.want) {
					t.Errorf("error %q does not say %q", msg, tc.want)
				}
			case tc.want == "":
				if len(body) != 0 {
					t.Errorf("body %q, want none", body)
				}
			default:
				if !httpJSONEqual(t, body, []byte(tc.want)) {
					t.Errorf("body %s, want %s", body, tc.want)
				}
			}
		})
	}
}

// httpInferResponse is a decoded JSON inference response.
type httpInferResponse struct {
	ModelName    string `json:"model_name"`
	ModelVersion string `json:"model_version"`
	ID           string `json:"id"`
	Outputs      []struct {
		Name       string         `json:"name"`
		Datatype   string         `json:"datatype"`
		Shape      []int64        `json:"shape"`
		Data       []any          `json:"data"`
		Parameters map[string]any `json:"parameters"`
	} `json:"outputs"`
}

func TestHTTPInferJSON(t *testing.T) {
	srv, f := httpTestServer(t, Limits{})
	tests := []struct {
		name, path, body string
		// version, id and outputs are what the response must hold: each
		// output as "name datatype shape data" in JSON.
		version, id string
		outputs     []string
	}{
		{"flat FP32", "/v2/models/double/infer",
			`{"inputs":[{"name":"x","shape":[2,2],"datatype":"FP32","data":[1,2.5,-3,0.1]}]}`,
			"2", "", []string{`x_2x FP32 [2,2] [2,5,-6,0.2]`}},
		{"nested FP32, id and version", "/v2/models/double/versions/1/infer",
			`{"id":"req-7","inputs":[{"name":"x","shape":[2,3],"datatype":"FP32","data":[[1,2,3],[4,5,6]]}]}`,
			"1", "req-7", []string{`x_2x FP32 [2,3] [2,4,6,8,10,12]`}},
		{"fields in any order", "/v2/models/double/infer",
			`{"outputs":[{"name":"x_2x"}],"inputs":[{"data":[[1],[2]],"datatype":"INT64","shape":[2,1],"name":"x"}],"id":"z"}`,
			"2", "z", []string{`x_2x INT64 [2,1] [2,4]`}},
		{"FP64", "/v2/models/double/infer",
			`{"inputs":[{"name":"x","shape":[3],"datatype":"FP64","data":[1e300,0.1,-0]}]}`,
			"2", "", []string{`x_2x FP64 [3] [2e+300,0.2,-0]`}},
		{"INT32 and integral floats", "/v2/models/double/infer",
			`{"inputs":[{"name":"x","shape":[3],"datatype":"INT32","data":[-7,2.0,1e3]}]}`,
			"2", "", []string{`x_2x INT32 [3] [-14,4,2000]`}},
		{"INT64 beyond float64", "/v2/models/double/infer",
			`{"inputs":[{"name":"x","shape":[1],"datatype":"INT64","data":[1152921504606846977]}]}`,
			"2", "", []string{`x_2x INT64 [1] [2305843009213693954]`}},
		{"UINT8", "/v2/models/double/infer",
			`{"inputs":[{"name":"x","shape":[2],"datatype":"UINT8","data":[0,100]}]}`,
			"2", "", []string{`x_2x UINT8 [2] [0,200]`}},
		{"BOOL", "/v2/models/double/infer",
			`{"inputs":[{"name":"x","shape":[1,3],"datatype":"BOOL","data":[[true,false,true]]}]}`,
			"2", "", []string{`x_2x BOOL [1,3] [true,false,true]`}},
		{"FP16", "/v2/models/double/infer",
			`{"inputs":[{"name":"x","shape":[3],"datatype":"FP16","data":[0.05,1.5,-1000]}]}`,
			"2", "", []string{`x_2x FP16 [3] [0.1,3,-2000]`}},
		{"BF16", "/v2/models/double/infer",
			`{"inputs":[{"name":"x","shape":[2],"datatype":"BF16","data":[0.5,3]}]}`,
			"2", "", []string{`x_2x BF16 [2] [1,6]`}},
		{"NaN and infinities", "/v2/models/double/infer",
			`{"inputs":[{"name":"x","shape":[3],"datatype":"FP32","data":["NaN","Infinity","-inf"]}]}`,
			"2", "", []string{`x_2x FP32 [3] ["NaN","Infinity","-Infinity"]`}},
		{"scalar", "/v2/models/double/infer",
			`{"inputs":[{"name":"x","shape":[],"datatype":"FP32","data":[4]}]}`,
			"2", "", []string{`x_2x FP32 [] [8]`}},
		{"empty tensor", "/v2/models/double/infer",
			`{"inputs":[{"name":"x","shape":[0,3],"datatype":"FP32","data":[]}]}`,
			"2", "", []string{`x_2x FP32 [0,3] []`}},
		{"nested with a zero dimension", "/v2/models/double/infer",
			`{"inputs":[{"name":"x","shape":[2,0],"datatype":"FP32","data":[[],[]]}]}`,
			"2", "", []string{`x_2x FP32 [2,0] []`}},
		{"two inputs, one output asked", "/v2/models/double/infer",
			`{"inputs":[{"name":"a","shape":[1],"datatype":"FP32","data":[1]},{"name":"b","shape":[1],"datatype":"INT32","data":[5]}],"outputs":[{"name":"b_2x"}]}`,
			"2", "", []string{`b_2x INT32 [1] [10]`}},
		{"unknown fields and parameters", "/v2/models/double/infer",
			`{"extra":{"deep":[1,{"x":null}]},"parameters":{"priority":1,"tag":"a\"b","f":1.5,"ok":false},"inputs":[{"name":"x","shape":[1],"datatype":"FP32","parameters":{"note":true},"data":[1],"more":"x"}]}`,
			"2", "", []string{`x_2x FP32 [1] [2]`}},
		{"escaped strings", "/v2/models/double/infer",
			`{"id":"\u00e9\n","inputs":[{"name":"\u0078","shape":[1],"datatype":"FP32","data":[1]}]}`,
			"2", "é\n", []string{`x_2x FP32 [1] [2]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, hdr, body := httpDo(t, srv, "POST", tc.path, map[string]string{"Content-Type": "application/json"}, []byte(tc.body))
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			if ct := hdr.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if !json.Valid(body) {
				t.Fatalf("response is not JSON: %q", body)
			}
			var r httpInferResponse
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber() // an INT64 beyond 2^53 keeps its digits
			if err := dec.Decode(&r); err != nil {
				t.Fatal(err)
			}
			if r.ModelName != "double" || r.ModelVersion != tc.version || r.ID != tc.id {
				t.Errorf("model %q version %q id %q, want double %q %q", r.ModelName, r.ModelVersion, r.ID, tc.version, tc.id)
			}
			var got []string
			for _, o := range r.Outputs {
				shape, _ := json.Marshal(o.Shape)
				data, _ := json.Marshal(o.Data)
				if o.Data == nil {
					data = []byte("[]")
				}
				got = append(got, o.Name+" "+o.Datatype+" "+string(shape)+" "+string(data))
			}
			if strings.Join(got, "\n") != strings.Join(tc.outputs, "\n") {
				t.Errorf("outputs\n%s\nwant\n%s\nbody %s", strings.Join(got, "\n"), strings.Join(tc.outputs, "\n"), body)
			}
		})
	}
	if r := f.takeRejects(); len(r) != 0 {
		t.Errorf("good requests were counted as rejected: %v", r)
	}
}

// httpRawFP32 returns the little-endian bytes of v.
func httpRawFP32(v ...float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// httpBinaryBody returns a binary-data request: header, then raw, with the
// header's length for Inference-Header-Content-Length.
func httpBinaryBody(header string, raw ...[]byte) ([]byte, map[string]string) {
	b := []byte(header)
	for _, r := range raw {
		b = append(b, r...)
	}
	return b, map[string]string{"Inference-Header-Content-Length": strconv.Itoa(len(header)), "Content-Type": "application/octet-stream"}
}

func TestHTTPInferBinary(t *testing.T) {
	srv, f := httpTestServer(t, Limits{})
	tests := []struct {
		name   string
		header string
		raw    [][]byte
		// outputs are "name datatype shape" and then either "json DATA"
		// or "binary" with the raw bytes expected in order in bin.
		outputs []string
		bin     []byte
	}{
		{"binary in, JSON out",
			`{"inputs":[{"name":"x","shape":[1,3],"datatype":"FP32","parameters":{"binary_data_size":12}}]}`,
			[][]byte{httpRawFP32(1, 2, 3)},
			[]string{`x_2x FP32 [1,3] json [2,4,6]`}, nil},
		{"binary in, binary out",
			`{"inputs":[{"name":"x","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}}],"outputs":[{"name":"x_2x","parameters":{"binary_data":true}}]}`,
			[][]byte{httpRawFP32(1.5, -2)},
			[]string{`x_2x FP32 [2] binary`}, httpRawFP32(3, -4)},
		{"JSON in, all binary out",
			`{"parameters":{"binary_data_output":true},"inputs":[{"name":"x","shape":[2],"datatype":"FP32","data":[1,2]},{"name":"b","shape":[2],"datatype":"BOOL","data":[true,false]}]}`,
			nil,
			[]string{`x_2x FP32 [2] binary`, `b_2x BOOL [2] binary`}, append(httpRawFP32(2, 4), 1, 0)},
		{"mixed inputs in order",
			`{"inputs":[{"name":"a","shape":[1],"datatype":"INT64","parameters":{"binary_data_size":8}},{"name":"j","shape":[1],"datatype":"UINT8","data":[3]},{"name":"b","shape":[2],"datatype":"UINT8","parameters":{"binary_data_size":2}}],"outputs":[{"name":"b_2x","parameters":{"binary_data":true}},{"name":"a_2x"},{"name":"j_2x","parameters":{"binary_data":false}}]}`,
			[][]byte{binary.LittleEndian.AppendUint64(nil, 21), {7, 9}},
			[]string{`a_2x INT64 [1] json [42]`, `j_2x UINT8 [1] json [6]`, `b_2x UINT8 [2] binary`}, []byte{14, 18}},
		{"binary_data false wins over binary_data_output",
			`{"parameters":{"binary_data_output":true},"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]},{"name":"y","shape":[1],"datatype":"FP32","data":[3]}],"outputs":[{"name":"x_2x","parameters":{"binary_data":false}},{"name":"y_2x"}]}`,
			nil,
			[]string{`x_2x FP32 [1] json [2]`, `y_2x FP32 [1] binary`}, httpRawFP32(6)},
		{"empty binary tensor",
			`{"inputs":[{"name":"x","shape":[0],"datatype":"FP32","parameters":{"binary_data_size":0}}],"outputs":[{"name":"x_2x","parameters":{"binary_data":true}}]}`,
			nil,
			[]string{`x_2x FP32 [0] binary`}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, hdr := httpBinaryBody(tc.header, tc.raw...)
			status, rh, resp := httpDo(t, srv, "POST", "/v2/models/double/infer", hdr, body)
			if status != 200 {
				t.Fatalf("status %d: %s", status, resp)
			}
			header, bin := resp, []byte(nil)
			wantBinary := tc.bin != nil || strings.Contains(strings.Join(tc.outputs, " "), "binary")
			if v := rh.Get("Inference-Header-Content-Length"); wantBinary {
				n, err := strconv.Atoi(v)
				if err != nil || n > len(resp) {
					t.Fatalf("Inference-Header-Content-Length %q for a body of %d bytes", v, len(resp))
				}
				header, bin = resp[:n], resp[n:]
				if ct := rh.Get("Content-Type"); ct != "application/octet-stream" {
					t.Errorf("Content-Type %q", ct)
				}
			} else if v != "" {
				t.Errorf("Inference-Header-Content-Length %q on a JSON response", v)
			}
			var r httpInferResponse
			if err := json.Unmarshal(header, &r); err != nil {
				t.Fatalf("header %q: %v", header, err)
			}
			var got []string
			var sizes int
			for _, o := range r.Outputs {
				shape, _ := json.Marshal(o.Shape)
				line := o.Name + " " + o.Datatype + " " + string(shape)
				if size, ok := o.Parameters["binary_data_size"].(float64); ok {
					if o.Data != nil {
						t.Errorf("output %s has data and binary_data_size", o.Name)
					}
					line += " binary"
					sizes += int(size)
				} else {
					data, _ := json.Marshal(o.Data)
					line += " json " + string(data)
				}
				got = append(got, line)
			}
			if strings.Join(got, "\n") != strings.Join(tc.outputs, "\n") {
				t.Errorf("outputs\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.outputs, "\n"))
			}
			if sizes != len(bin) || !bytes.Equal(bin, tc.bin) {
				t.Errorf("binary section %v (sizes say %d bytes), want %v", bin, sizes, tc.bin)
			}
		})
	}
	if r := f.takeRejects(); len(r) != 0 {
		t.Errorf("good requests were counted as rejected: %v", r)
	}
}

func TestHTTPInferErrors(t *testing.T) {
	srv, f := httpTestServer(t, Limits{MaxBodyBytes: 1 << 20, MaxElements: 1 << 20})
	in := func(s string) string { return `{"inputs":[` + s + `]}` }
	x := func(shape, datatype, data string) string {
		return in(`{"name":"x","shape":` + shape + `,"datatype":"` + datatype + `","data":` + data + `}`)
	}
	tests := []struct {
		name, method, path string
		hdr                map[string]string
		body               string
		status             int
		msg                string
		// rejected says the handler refused the request before Infer
		// (counted with Reject); otherwise the backend answered it.
		rejected bool
	}{
		{"malformed JSON", "POST", "", nil, `{"inputs":[{"name":"x",}]}`, 400, "request JSON at byte 23: expected a member name in quotes, found '}'", true},
		{"not an object", "POST", "", nil, `[1]`, 400, "the request must be an object", true},
		{"empty body", "POST", "", nil, ``, 400, "the request must be an object, found the end of the JSON", true},
		{"trailing garbage", "POST", "", nil, x("[1]", "FP32", "[1]") + "x", 400, "after the end of the JSON value", true},
		{"bad literal", "POST", "", nil, `{"id":nul}`, 400, "\"id\" must be a string, found 'n'", true},
		{"bad number", "POST", "", nil, x("[1]", "FP32", "[01]"), 400, "expected ',' or ']'", true},
		{"hex number", "POST", "", nil, x("[1]", "FP32", "[0x10]"), 400, "expected ',' or ']'", true},
		{"control character in a string", "POST", "", nil, "{\"id\":\"a\x01\"}", 400, "control character", true},
		{"no inputs", "POST", "", nil, `{"id":"a"}`, 400, `no "inputs"`, true},
		{"empty inputs", "POST", "", nil, `{"inputs":[]}`, 400, `no "inputs"`, true},
		{"inputs not an array", "POST", "", nil, `{"inputs":{}}`, 400, `"inputs" must be an array`, true},
		{"input without a name", "POST", "", nil, in(`{"shape":[1],"datatype":"FP32","data":[1]}`), 400, `inputs[0] has no "name"`, true},
		{"input without a shape", "POST", "", nil, in(`{"name":"x","datatype":"FP32","data":[1]}`), 400, `inputs[0] has no "shape"`, true},
		{"input without a datatype", "POST", "", nil, in(`{"name":"x","shape":[1],"data":[1]}`), 400, `inputs[0] has no "datatype"`, true},
		{"input without data", "POST", "", nil, in(`{"name":"x","shape":[1],"datatype":"FP32"}`), 400, `input "x" has no "data"`, true},
		{"duplicate input", "POST", "", nil, in(`{"name":"x","shape":[1],"datatype":"FP32","data":[1]},{"name":"x","shape":[1],"datatype":"FP32","data":[1]}`), 400, `input "x" appears twice`, true},
		{"duplicate field", "POST", "", nil, in(`{"name":"x","name":"y","shape":[1],"datatype":"FP32","data":[1]}`), 400, `has "name" twice`, true},
		{"too few elements", "POST", "", nil, x("[2,2]", "FP32", "[1,2,3]"), 400, `input "x": data has 3 elements, shape [2 2] needs 4`, true},
		{"too many elements", "POST", "", nil, x("[3]", "FP32", "[1,2,3,4]"), 400, `data has more than the 3 elements shape [3] holds`, true},
		{"nested rows too short", "POST", "", nil, x("[2,2]", "FP32", "[[1,2],[3]]"), 400, `data has 1 elements at depth 2, shape [2 2] says 2`, true},
		{"nested too many rows", "POST", "", nil, x("[1,2]", "FP32", "[[1,2],[3,4]]"), 400, `more than 1 elements at depth 1`, true},
		{"nested too deep", "POST", "", nil, x("[2]", "FP32", "[[1],[2]]"), 400, `nested deeper than shape [2]`, true},
		{"nested mixed", "POST", "", nil, x("[2,1]", "FP32", "[[1],2]"), 400, `must be nested 2 deep for shape [2 1], or flat`, true},
		{"flat then nested", "POST", "", nil, x("[2]", "FP32", "[1,[2]]"), 400, `not a number`, true},
		{"negative dimension", "POST", "", nil, x("[-1,4]", "FP32", "[1,2,3,4]"), 400, `a dimension cannot be negative`, true},
		{"fractional dimension", "POST", "", nil, x("[1.5]", "FP32", "[1]"), 400, `holds 1.5, not an integer dimension`, true},
		{"huge shape", "POST", "", nil, x("[1000000,1000000]", "FP32", "[1]"), 400, `has more than 1048576 elements`, true},
		{"zero and a huge dimension", "POST", "", nil, x("[0,1000000000000]", "FP32", "[]"), 400, `has a dimension over the limit of 1048576 elements`, true},
		{"shape larger than the body", "POST", "", nil, x("[1000,1000]", "FP32", "[1]"), 400, `but its data cannot hold more than`, true},
		{"unknown datatype", "POST", "", nil, x("[1]", "FP33", "[1]"), 400, `input "x": unknown datatype "FP33"`, true},
		{"unsupported datatype", "POST", "", nil, x("[1]", "INT8", "[1]"), 400, `datatype INT8 is not supported`, true},
		{"BYTES", "POST", "", nil, x("[1]", "BYTES", `["abc"]`), 400, `datatype BYTES is not supported`, true},
		{"string for FP32", "POST", "", nil, x("[2]", "FP32", `[1,"2"]`), 400, `element 1 is the string "2"; FP32 takes numbers`, true},
		{"bool for FP32", "POST", "", nil, x("[1]", "FP32", `[true]`), 400, `element 0 is 't', not a number (datatype FP32)`, true},
		{"number for BOOL", "POST", "", nil, x("[1]", "BOOL", `[1]`), 400, `element 0 is '1', not true or false`, true},
		{"fraction for INT32", "POST", "", nil, x("[1]", "INT32", `[1.5]`), 400, `1.5, is not an integer (datatype INT32)`, true},
		{"INT32 overflow", "POST", "", nil, x("[1]", "INT32", `[2147483648]`), 400, `out of the range of INT32`, true},
		{"UINT8 negative", "POST", "", nil, x("[1]", "UINT8", `[-1]`), 400, `out of the range of UINT8`, true},
		{"FP32 overflow", "POST", "", nil, x("[1]", "FP32", `[1e39]`), 400, `1e39, is out of the range of FP32`, true},
		{"FP16 overflow", "POST", "", nil, x("[1]", "FP16", `[70000]`), 400, `out of the range of FP16`, true},
		{"data not an array", "POST", "", nil, x("[1]", "FP32", `1`), 400, `"data" must be an array`, true},
		{"data before shape, bad element", "POST", "", nil, in(`{"data":[1,true],"name":"x","datatype":"FP32","shape":[2]}`), 400, `request JSON at byte 22: input "x": element 1 is 't', not a number`, true},
		{"data before shape, wrong count", "POST", "", nil, in(`{"data":[1,2],"name":"x","datatype":"FP32","shape":[3]}`), 400, `shape [3] has 3 elements, but its data cannot hold more than 2`, true},
		{"deep nesting", "POST", "", nil, strings.Repeat("[", 1000000), 400, `the request must be an object`, true},
		{"deep nesting in an object", "POST", "", nil, `{"x":` + strings.Repeat("[", 1000000), 400, `nested deeper than 64 levels`, true},
		{"deep nesting in data", "POST", "", nil, x("[1]", "FP32", strings.Repeat("[", 100000)), 400, `nested deeper than`, true},
		{"oversized body", "POST", "", nil, x("[1]", "FP32", "["+strings.Repeat("1,", 600000)+"1]"), 413, `more than this server's limit of 1048576 bytes`, true},
		{"not gzip", "POST", "", map[string]string{"Content-Encoding": "gzip"}, x("[1]", "FP32", "[1]"), 400, `the request body is not valid gzip`, true},
		{"brotli body", "POST", "", map[string]string{"Content-Encoding": "br"}, x("[1]", "FP32", "[1]"), 415, `Content-Encoding "br" is not supported`, true},
		{"bad timeout", "POST", "", nil, `{"parameters":{"timeout":"soon"},"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}`, 400, `"timeout" must be a number of microseconds`, true},
		{"negative timeout", "POST", "", nil, `{"parameters":{"timeout":-5},"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}`, 400, `between 0 and a year`, true},
		{"bad binary_data_output", "POST", "", nil, `{"parameters":{"binary_data_output":1},"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}`, 400, `"binary_data_output" must be true or false`, true},
		{"classification", "POST", "", nil, `{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}],"outputs":[{"name":"x_2x","parameters":{"classification":3}}]}`, 400, `"classification": that extension is not supported`, true},
		{"shared memory", "POST", "", nil, in(`{"name":"x","shape":[1],"datatype":"FP32","parameters":{"shared_memory_region":"r"}}`), 400, `shared-memory extension is not supported`, true},
		{"nested parameter", "POST", "", nil, `{"parameters":{"big":[1,2,3]},"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}`, 400, `the request's "parameters": parameter "big" must be a bool, number or string`, true},
		{"parameters not an object", "POST", "", nil, `{"parameters":[],"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}`, 400, `the request's "parameters" must be an object`, true},
		{"output without a name", "POST", "", nil, `{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}],"outputs":[{}]}`, 400, `outputs[0] has no name`, true},
		{"output twice", "POST", "", nil, `{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}],"outputs":[{"name":"a"},{"name":"a"}]}`, 400, `output "a" is asked for twice`, true},
		{"GET infer", "GET", "", nil, "", 405, `takes POST, not GET`, true},
		{"bad model name", "POST", "/v2/models/%2E%2E/infer", nil, x("[1]", "FP32", "[1]"), 400, `model name ".." is not valid`, true},

		// Binary data.
		{"binary without header", "POST", "", nil, in(`{"name":"x","shape":[1],"datatype":"FP32","parameters":{"binary_data_size":4}}`), 400, `no Inference-Header-Content-Length`, true},
		{"binary sizes short", "POST", "", httpHdrLen(`{"inputs":[{"name":"x","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}}]}`),
			`{"inputs":[{"name":"x","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}}]}` + "1234", 400, `add up to 8 bytes, but the body has 4 bytes after`, true},
		{"binary sizes long", "POST", "", httpHdrLen(`{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","parameters":{"binary_data_size":4}}]}`),
			`{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","parameters":{"binary_data_size":4}}]}` + "12345678", 400, `add up to 4 bytes, but the body has 8 bytes`, true},
		{"binary size against shape", "POST", "", httpHdrLen(`{"inputs":[{"name":"x","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":4}}]}`),
			`{"inputs":[{"name":"x","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":4}}]}` + "1234", 400, `FP32[2] needs 8 bytes of data, got 4`, true},
		{"binary size not an integer", "POST", "", httpHdrLen(`{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","parameters":{"binary_data_size":4.5}}]}`),
			`{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","parameters":{"binary_data_size":4.5}}]}` + "1234", 400, `binary_data_size must be a non-negative integer`, true},
		{"binary and data", "POST", "", httpHdrLen(`{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1],"parameters":{"binary_data_size":4}}]}`),
			`{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1],"parameters":{"binary_data_size":4}}]}` + "1234", 400, `has both "data" and parameters.binary_data_size`, true},
		{"binary bad BOOL", "POST", "", httpHdrLen(`{"inputs":[{"name":"x","shape":[1],"datatype":"BOOL","parameters":{"binary_data_size":1}}]}`),
			`{"inputs":[{"name":"x","shape":[1],"datatype":"BOOL","parameters":{"binary_data_size":1}}]}` + "\x07", 400, `BOOL element 0 is byte 7`, true},
		{"header longer than body", "POST", "", map[string]string{"Inference-Header-Content-Length": "5000"}, x("[1]", "FP32", "[1]"), 400, `Inference-Header-Content-Length is 5000, but the body has only`, true},
		{"header not a number", "POST", "", map[string]string{"Inference-Header-Content-Length": "abc"}, x("[1]", "FP32", "[1]"), 400, `Inference-Header-Content-Length "abc" is not a length`, true},
		{"header cuts the JSON", "POST", "", map[string]string{"Inference-Header-Content-Length": "10"}, x("[1]", "FP32", "[1]"), 400, `request JSON at byte 10`, true},

		// Errors from the backend: not rejected by the front end.
		{"unknown model", "POST", "/v2/models/nope/infer", nil, x("[1]", "FP32", "[1]"), 404, `unknown model "nope"`, false},
		{"unknown version", "POST", "/v2/models/double/versions/9/infer", nil, x("[1]", "FP32", "[1]"), 404, `no version "9"`, false},
		{"unknown output", "POST", "", nil, `{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}],"outputs":[{"name":"zz"}]}`, 400, `no output "zz"`, false},
		{"queue full", "POST", "/v2/models/full/infer", nil, x("[1]", "FP32", "[1]"), 429, `queue is full`, false},
		{"not ready", "POST", "/v2/models/sleepy/infer", nil, x("[1]", "FP32", "[1]"), 503, `not ready`, false},
		{"deadline", "POST", "/v2/models/slow/infer", nil, `{"parameters":{"timeout":20000},"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}`, 504, `deadline (20ms) passed`, false},
		{"plain error", "POST", "/v2/models/fail/infer", nil, x("[1]", "FP32", "[1]"), 500, `kernel failed`, false},
		{"panic", "POST", "/v2/models/boom/infer", nil, x("[1]", "FP32", "[1]"), 500, `internal server error while serving POST /v2/models/boom/infer`, false},
	}
	// The panic case logs its stack, which is right for a server and
	// noise in a test.
	defer log.SetOutput(log.Writer())
	log.SetOutput(io.Discard)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = "/v2/models/double/infer"
			}
			status, _, body := httpDo(t, srv, tc.method, path, tc.hdr, []byte(tc.body))
			if status != tc.status {
				t.Fatalf("status %d, want %d (body %.300q)", status, tc.status, body)
			}
			msg := httpErrorOf(t, body)
			if !strings.Contains(msg, tc.msg) {
				t.Errorf("error %q does not say %q", msg, tc.msg)
			}
			for _, bad := range []string{"panic", "goroutine", ".go:"} {
				if strings.Contains(msg, bad) {
					t.Errorf("error %q contains %q", msg, bad)
				}
			}
			rejects := f.takeRejects()
			switch {
			case tc.rejected && (len(rejects) != 1 || rejects[0].status != tc.status):
				t.Errorf("rejects %v, want one with status %d", rejects, tc.status)
			case !tc.rejected && len(rejects) != 0:
				t.Errorf("rejects %v, want none: the backend answered", rejects)
			}
		})
	}
}

// httpHdrLen returns the binary-data header for a JSON header.
func httpHdrLen(header string) map[string]string {
	return map[string]string{"Inference-Header-Content-Length": strconv.Itoa(len(header))}
}

func TestHTTPInferDeadline(t *testing.T) {
	srv, f := httpTestServer(t, Limits{DefaultTimeout: 7 * time.Second})
	tests := []struct {
		name, params string
		want         time.Duration
	}{
		{"default", ``, 7 * time.Second},
		{"timeout parameter", `"parameters":{"timeout":250000},`, 250 * time.Millisecond},
		{"fractional timeout", `"parameters":{"timeout":1500.5},`, 1500 * time.Microsecond},
		{"zero is the default", `"parameters":{"timeout":0},`, 7 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := `{` + tc.params + `"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}`
			if status, _, b := httpDo(t, srv, "POST", "/v2/models/double/infer", nil, []byte(body)); status != 200 {
				t.Fatalf("status %d: %s", status, b)
			}
			f.mu.Lock()
			got := f.deadline
			f.mu.Unlock()
			// The deadline is measured a moment after it was set.
			if got > tc.want || got < tc.want-tc.want/10-time.Millisecond {
				t.Errorf("deadline %v away, want %v", got, tc.want)
			}
		})
	}
}

// TestHTTPClientGoneCancels checks that a client that disconnects cancels
// its request's context, so that the core can drop it from the queue.
func TestHTTPClientGoneCancels(t *testing.T) {
	srv, f := httpTestServer(t, Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}`
	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v2/models/slow/infer", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-f.slowDone:
		if err != context.Canceled {
			t.Errorf("the request's context ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request's context was not cancelled when the client went away")
	}
	if err := <-done; err == nil {
		t.Error("the client's request did not fail after it was cancelled")
	}
}

// TestHTTPOversizedChunkedBody checks the limit on a body sent without a
// Content-Length, which only the reader can catch.
func TestHTTPOversizedChunkedBody(t *testing.T) {
	srv, f := httpTestServer(t, Limits{MaxBodyBytes: 1000})
	body := `{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1` + strings.Repeat(" ", 2000) + `]}]}`
	// An io.Reader that is not a *bytes.Reader or *strings.Reader leaves
	// the length unknown, so the client sends the body chunked.
	req, err := http.NewRequest("POST", srv.URL+"/v2/models/double/infer", io.MultiReader(strings.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 413 {
		t.Fatalf("status %d, want 413 (%s)", resp.StatusCode, b)
	}
	if msg := httpErrorOf(t, b); !strings.Contains(msg, "larger than this server's limit of 1000 bytes") {
		t.Errorf("error %q", msg)
	}
	if r := f.takeRejects(); len(r) != 1 || r[0].status != 413 {
		t.Errorf("rejects %v", r)
	}
}

// TestHTTPConcurrentRequests sends requests from many goroutines at once,
// JSON and binary, and checks that each gets its own answer: the pooled
// buffers must never be shared between requests in flight.
func TestHTTPConcurrentRequests(t *testing.T) {
	srv, _ := httpTestServer(t, Limits{})
	const workers, each = 8, 25
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func(w int) {
			for i := 0; i < each; i++ {
				v := float32(w*1000 + i)
				var body []byte
				var hdr map[string]string
				if i%2 == 0 {
					body = []byte(`{"id":"` + strconv.Itoa(w) + `","inputs":[{"name":"x","shape":[1,3],"datatype":"FP32","data":[` +
						strconv.FormatFloat(float64(v), 'g', -1, 32) + `,1,2]}]}`)
				} else {
					body, hdr = httpBinaryBody(`{"id":"`+strconv.Itoa(w)+`","inputs":[{"name":"x","shape":[1,3],"datatype":"FP32","parameters":{"binary_data_size":12}}]}`, httpRawFP32(v, 1, 2))
				}
				req, _ := http.NewRequest("POST", srv.URL+"/v2/models/double/infer", bytes.NewReader(body))
				for k, val := range hdr {
					req.Header.Set(k, val)
				}
				resp, err := srv.Client().Do(req)
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var r struct {
					ID      string `json:"id"`
					Outputs []struct {
						Data []float32 `json:"data"`
					} `json:"outputs"`
				}
				if err := json.Unmarshal(b, &r); err != nil || r.ID != strconv.Itoa(w) || len(r.Outputs) != 1 ||
					len(r.Outputs[0].Data) != 3 || r.Outputs[0].Data[0] != 2*v || r.Outputs[0].Data[2] != 4 {
					errs <- fmt.Errorf("worker %d request %d: response %s (%v)", w, i, b, err)
					return
				}
			}
			errs <- nil
		}(w)
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestAppendInferResponseRefusesBadOutputs checks that a response the
// core got wrong is answered 500 with a message, not sent half right.
func TestAppendInferResponseRefusesBadOutputs(t *testing.T) {
	ok := tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2)
	tests := []struct {
		name string
		out  InferOutput
		msg  string
	}{
		{"no tensor", InferOutput{Name: "y"}, `output "y" has no tensor`},
		{"shape against tensor", InferOutput{Name: "y", Shape: []int64{3}, Tensor: ok}, `has shape [3] but 4 elements`},
		{"negative shape", InferOutput{Name: "y", Shape: []int64{-4}, Tensor: ok}, `has shape [-4] but 4 elements`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := appendInferResponse(nil, &InferResponse{Outputs: []InferOutput{tc.out}}, &InferRequest{}, httpOptions{})
			if StatusOf(err) != 500 || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want a 500 saying %q", err, tc.msg)
			}
		})
	}
}

// TestHTTPCompressedBody sends gzip and deflate bodies, and one that
// inflates past the limit.
func TestHTTPCompressedBody(t *testing.T) {
	srv, f := httpTestServer(t, Limits{MaxBodyBytes: 4096})
	good := []byte(`{"inputs":[{"name":"x","shape":[2],"datatype":"FP32","data":[1,2]}]}`)
	bomb := []byte(`{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1` + strings.Repeat(" ", 100000) + `]}]}`)
	compress := func(enc string, b []byte) []byte {
		var buf bytes.Buffer
		var w io.WriteCloser
		if enc == "gzip" {
			w = gzip.NewWriter(&buf)
		} else {
			w, _ = flate.NewWriter(&buf, flate.BestCompression)
		}
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	tests := []struct {
		enc    string
		body   []byte
		status int
		want   string
	}{
		{"gzip", good, 200, `"data":[2,4]`},
		{"deflate", good, 200, `"data":[2,4]`},
		{"gzip", bomb, 413, "decompresses to more than this server's limit of 4096 bytes"},
		{"deflate", bomb, 413, "decompresses to more than this server's limit of 4096 bytes"},
	}
	for _, tc := range tests {
		body := compress(tc.enc, tc.body)
		if tc.status == 413 && len(body) > 4096 {
			t.Fatalf("the compressed bomb has %d bytes, over the limit itself", len(body))
		}
		status, _, b := httpDo(t, srv, "POST", "/v2/models/double/infer", map[string]string{"Content-Encoding": tc.enc}, body)
		if status != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s, %d bytes: status %d, body %s; want %d with %q", tc.enc, len(tc.body), status, b, tc.status, tc.want)
		}
	}
	if r := f.takeRejects(); len(r) != 2 {
		t.Errorf("rejects %v, want the two bombs", r)
	}
}
