package jit

import (
	"fmt"
	"reflect"
	"strings"
)

var tensorType = reflect.TypeFor[*Tensor]()

// flatten appends the tensors found in v (depth first, in field and element
// order) to leaves, and writes the values of its plain constants to key.
func flatten(v reflect.Value, leaves *[]*Tensor, key *strings.Builder) error {
	if v.Type() == tensorType {
		if v.IsNil() {
			return fmt.Errorf("nil tensor")
		}
		*leaves = append(*leaves, v.Interface().(*Tensor))
		return nil
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		fmt.Fprintf(key, "[%d:", v.Len())
		for i := range v.Len() {
			if err := flatten(v.Index(i), leaves, key); err != nil {
				return fmt.Errorf("element %d: %v", i, err)
			}
		}
		key.WriteString("]")
		return nil
	case reflect.Struct:
		key.WriteString("{")
		t := v.Type()
		for i := range v.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				if containsTensor(f.Type) {
					return fmt.Errorf("unexported field %s holds tensors", f.Name)
				}
				continue
			}
			if err := flatten(v.Field(i), leaves, key); err != nil {
				return fmt.Errorf("field %s: %v", f.Name, err)
			}
		}
		key.WriteString("}")
		return nil
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		fmt.Fprintf(key, "%#v,", v.Interface())
		return nil
	case reflect.Interface:
		if v.IsNil() {
			key.WriteString("nil,")
			return nil
		}
		return flatten(v.Elem(), leaves, key)
	}
	return fmt.Errorf("unsupported type %v (use tensors, slices, structs of tensors, or plain values)", v.Type())
}

func containsTensor(t reflect.Type) bool {
	switch {
	case t == tensorType:
		return true
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return containsTensor(t.Elem())
	case t.Kind() == reflect.Struct:
		for i := range t.NumField() {
			if containsTensor(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// rebuild returns a copy of template whose tensors are replaced, in
// flatten's order, by leaves[*next:].
func rebuild(template reflect.Value, leaves []*Tensor, next *int) reflect.Value {
	t := template.Type()
	if t == tensorType {
		v := reflect.ValueOf(leaves[*next])
		*next++
		return v
	}
	switch template.Kind() {
	case reflect.Slice:
		if template.IsNil() {
			return template
		}
		out := reflect.MakeSlice(t, template.Len(), template.Len())
		for i := range template.Len() {
			out.Index(i).Set(rebuild(template.Index(i), leaves, next))
		}
		return out
	case reflect.Array:
		out := reflect.New(t).Elem()
		for i := range template.Len() {
			out.Index(i).Set(rebuild(template.Index(i), leaves, next))
		}
		return out
	case reflect.Struct:
		out := reflect.New(t).Elem()
		out.Set(template)
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				out.Field(i).Set(rebuild(template.Field(i), leaves, next))
			}
		}
		return out
	case reflect.Interface:
		if template.IsNil() {
			return template
		}
		out := reflect.New(t).Elem()
		out.Set(rebuild(template.Elem(), leaves, next))
		return out
	}
	return template
}
