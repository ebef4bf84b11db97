// Package control holds the control-flow primitives that stage into
// graphs: Cond, While and Scan, whose bodies are traced into regions of the
// enclosing graph (not unrolled) under Graph mode and run as Go closures in
// PyNative mode, and Print, which prints when it runs. Their VJP and JVP
// rules differentiate the bodies with package ad.
//
// The root package spore re-exports them and documents them; the ONNX
// importer and exporter use them directly (Prims, ScanLayout) to map
// ONNX's If, Loop and Scan.
package control
