// Package onnx loads ONNX models as spore cells and exports spore
// functions and cells as ONNX models.
//
// This package is being built: the operator table and the tensor decoding
// are in place; Load, Check and Export are not yet.
package onnx
