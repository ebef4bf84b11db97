// Package graph is spore's intermediate representation: a typed SSA DAG.
//
// Every Value is defined once — an input of the traced function, a
// parameter captured by reference, a constant, an op applying a
// core.Prim to earlier values, or one result (KindProj) of a multi-result
// op such as a control-flow node — and carries its shape and dtype. Values
// have dense integer IDs so that passes keep side tables in slices, in the
// style of Go's own SSA compiler. Graphs are built by a Tracer (which
// core.Apply feeds while a function runs on symbolic tensors) or by hand
// with the builder methods; Verify checks the invariants between passes;
// String and WriteDOT print them, and Doc turns one into data (for JSON);
// Replay re-evaluates one through the op dispatcher (to differentiate a
// traced body).
package graph
