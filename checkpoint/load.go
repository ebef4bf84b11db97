package checkpoint

import (
	"fmt"
	"path/filepath"
	"strings"
)

// FormatOf returns the format path's extension names, ".safetensors" or
// ".ckpt" (in lower case), or an error saying which extensions Save and
// Load understand. Callers that save after long work use it to refuse a
// bad path up front.
func FormatOf(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".safetensors", ".ckpt":
		return ext, nil
	default:
		return "", fmt.Errorf("checkpoint: cannot tell the format of %s from its extension %q; use .safetensors or .ckpt", path, ext)
	}
}

// Save writes params (and metadata, which may be nil) to path, choosing
// the format by extension (FormatOf): ".safetensors" for safetensors,
// ".ckpt" for MindSpore's format (with its CRC trailer). Optimiser state is
// saved the same way, as extra entries with prefixed names (see the package
// documentation).
func Save(path string, params []Param, metadata map[string]string) error {
	format, err := FormatOf(path)
	if err != nil {
		return err
	}
	if format == ".ckpt" {
		return SaveCkpt(path, params, metadata, nil)
	}
	return SaveSafetensors(path, params, metadata)
}

// Load reads a checkpoint written by Save (or by MindSpore, or by any
// safetensors writer), choosing the format by extension as Save does.
func Load(path string) ([]Param, map[string]string, error) {
	format, err := FormatOf(path)
	if err != nil {
		return nil, nil, err
	}
	if format == ".ckpt" {
		return LoadCkpt(path)
	}
	return LoadSafetensors(path)
}

// LoadError is returned by a strict LoadInto that found problems. It lists
// every problem at once; the destination was not changed.
type LoadError struct {
	Missing    []string // destination names with no checkpoint entry
	Unexpected []string // checkpoint names with no destination
	Mismatched []string // names whose shape or dtype differ
	Details    []string // one description per Mismatched name, same order
}

// Error formats the error as one line.
func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString("checkpoint: strict load refused, no parameter was changed:")
	list := func(what string, names []string) {
		if len(names) > 0 {
			fmt.Fprintf(&b, " %d %s (%s);", len(names), what, strings.Join(names, ", "))
		}
	}
	list("missing from the checkpoint", e.Missing)
	list("unexpected in the checkpoint", e.Unexpected)
	list("mismatched", e.Details)
	s := b.String()
	return strings.TrimSuffix(s, ";")
}

// LoadInto copies checkpoint values into parameters by name, with Assign —
// MindSpore's load_param_into_net. dst lists the parameters to fill (a
// cell, or Params); src is what Load returned.
//
// It reports the names of dst with no entry in src (missing), the names of
// src with no parameter in dst (unexpected), and the names present in both
// whose shape or dtype differ (mismatched), each list in the order of dst
// or src. Everything is checked before anything is assigned.
//
// With strict set, any problem at all makes LoadInto return a *LoadError
// listing every one of them, and no parameter is changed. Without it, the
// matching parameters are loaded, the others are left as they were, and the
// lists are returned with a nil error.
//
// Errors that are not about matching names — duplicate names, nil or
// symbolic tensors, a destination that is not a parameter — are returned
// in both modes, again before anything changes. LoadInto must be called
// outside traced functions.
func LoadInto(dst Named, src []Param, strict bool) (missing, unexpected, mismatched []string, err error) {
	dps := dst.NamedParameters()
	byName := make(map[string]int, len(src))
	for i, p := range src {
		if _, dup := byName[p.Name]; dup {
			return nil, nil, nil, fmt.Errorf("checkpoint: LoadInto: name %q appears twice in the source", p.Name)
		}
		if p.Tensor == nil {
			return nil, nil, nil, fmt.Errorf("checkpoint: LoadInto: source tensor %q is nil", p.Name)
		}
		if p.Tensor.IsSymbolic() {
			return nil, nil, nil, fmt.Errorf("checkpoint: LoadInto: source tensor %q is symbolic; load concrete values outside Jit", p.Name)
		}
		byName[p.Name] = i
	}
	used := make(map[string]bool, len(dps))
	var details []string
	var todo [][2]int
	for j, d := range dps {
		switch {
		case used[d.Name]:
			return nil, nil, nil, fmt.Errorf("checkpoint: LoadInto: name %q appears twice in the destination", d.Name)
		case d.Tensor == nil:
			return nil, nil, nil, fmt.Errorf("checkpoint: LoadInto: destination %q is nil", d.Name)
		case !d.Tensor.IsParameter():
			return nil, nil, nil, fmt.Errorf("checkpoint: LoadInto: destination %q is not a parameter, so it cannot be assigned in place", d.Name)
		}
		used[d.Name] = true
		i, ok := byName[d.Name]
		if !ok {
			missing = append(missing, d.Name)
			continue
		}
		s := src[i].Tensor
		if !s.Shape().Equal(d.Tensor.Shape()) || s.DType() != d.Tensor.DType() {
			mismatched = append(mismatched, d.Name)
			details = append(details, fmt.Sprintf("%s: checkpoint %v %v, parameter %v %v", d.Name, s.Shape(), s.DType(), d.Tensor.Shape(), d.Tensor.DType()))
			continue
		}
		todo = append(todo, [2]int{j, i})
	}
	for _, p := range src {
		if !used[p.Name] {
			unexpected = append(unexpected, p.Name)
		}
	}
	if strict && (len(missing) > 0 || len(unexpected) > 0 || len(mismatched) > 0) {
		return missing, unexpected, mismatched, &LoadError{Missing: missing, Unexpected: unexpected, Mismatched: mismatched, Details: details}
	}
	for _, ji := range todo {
		dps[ji[0]].Tensor.Assign(src[ji[1]].Tensor)
	}
	return missing, unexpected, mismatched, nil
}
