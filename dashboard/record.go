package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// The shape of a compiled function's record (spore.CompileRecord) as the
// page reads it. Only what the page uses is checked, and unknown fields
// are allowed, so that a newer writer's additions do not break an older
// dashboard; every field's type is checked by decoding into these.
type (
	recordShape struct {
		Name      string      `json:"name"`
		Signature string      `json:"signature"`
		Level     string      `json:"level"`
		Passes    []passShape `json:"passes"`
	}
	passShape struct {
		Pass  *string     `json:"pass"`
		Text  string      `json:"text"`
		Graph *graphShape `json:"graph"`
	}
	graphShape struct {
		Nodes   *[]*nodeShape `json:"nodes"`
		Inputs  []int64       `json:"inputs"`
		Outputs []int64       `json:"outputs"`
		Assigns []*struct {
			Param *int64 `json:"param"`
			Value *int64 `json:"value"`
		} `json:"assigns"`
	}
	nodeShape struct {
		ID      *int64         `json:"id"`
		Op      *string        `json:"op"`
		Kind    string         `json:"kind"`
		Inputs  []int64        `json:"inputs"`
		Shape   []int64        `json:"shape"`
		DType   string         `json:"dtype"`
		Attrs   map[string]any `json:"attrs"`
		Pass    string         `json:"pass"`
		Fused   []string       `json:"fused"`
		Source  string         `json:"source"`
		Regions []*struct {
			Name  string      `json:"name"`
			Graph *graphShape `json:"graph"`
			Binds []int64     `json:"binds"`
		} `json:"regions"`
	}
)

// checkRecord says what is wrong with a graph record that the page could
// not draw: not JSON, a field of the wrong type, or a pass without a
// graph, a node without an id or an op. Its message is short and names
// the field ("passes[2].graph.nodes[7]: no id").
func checkRecord(data []byte) error {
	if !json.Valid(data) {
		return errors.New("not valid JSON (a torn or foreign file?)")
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return errors.New("not a JSON object")
	}
	var rec recordShape
	if err := json.Unmarshal(data, &rec); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				field = "the record"
			}
			return fmt.Errorf("%s is %s, want %s", field, article(te.Value), typeName(te.Type))
		}
		return err
	}
	for i, p := range rec.Passes {
		at := fmt.Sprintf("passes[%d]", i)
		if p.Pass == nil {
			return fmt.Errorf("%s: no pass name", at)
		}
		if err := checkGraph(at+".graph", p.Graph); err != nil {
			return err
		}
	}
	return nil
}

// checkGraph checks one pass's graph, or a control-flow body's.
func checkGraph(at string, g *graphShape) error {
	if g == nil {
		return fmt.Errorf("%s is missing", at)
	}
	if g.Nodes == nil {
		return fmt.Errorf("%s.nodes is missing", at)
	}
	for i, n := range *g.Nodes {
		nat := fmt.Sprintf("%s.nodes[%d]", at, i)
		switch {
		case n == nil:
			return fmt.Errorf("%s is null, want a node", nat)
		case n.ID == nil:
			return fmt.Errorf("%s: no id", nat)
		case n.Op == nil:
			return fmt.Errorf("%s: no op", nat)
		}
		for j, r := range n.Regions {
			if r == nil {
				return fmt.Errorf("%s.regions[%d] is null, want a region", nat, j)
			}
			if err := checkGraph(fmt.Sprintf("%s.regions[%d].graph", nat, j), r.Graph); err != nil {
				return err
			}
		}
	}
	for i, a := range g.Assigns {
		if a == nil || a.Param == nil || a.Value == nil {
			return fmt.Errorf("%s.assigns[%d]: want a param and a value", at, i)
		}
	}
	return nil
}

// article is a JSON value kind as the decoder names it ("string",
// "number -1.5", "array") with its article.
func article(kind string) string {
	switch {
	case kind == "array" || kind == "object":
		return "an " + kind
	case kind == "null":
		return "null"
	default:
		return "a " + kind
	}
}

// typeName is what a Go field type wants, in JSON's words.
func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}
