// Package client is a Go client of the Open Inference Protocol (KServe
// v2, as Triton speaks it) over both of its transports: NewHTTP for
// HTTP/REST, NewGRPC for gRPC. It talks to spore's own server (package
// serve, "spore serve") and to any other v2 server, Triton's included.
//
// Tensors go as spore tensors: Infer takes named inputs and returns the
// outputs decoded, with the shape and datatype the server declared. Over
// HTTP they travel in Triton's binary-data extension (a JSON header, then
// the elements' little-endian bytes), which is smaller and faster than
// JSON and exact for every datatype; WithJSON sends JSON "data" instead,
// for servers without the extension. Over gRPC they travel as
// raw_input_contents and raw_output_contents.
//
// An error the server answers with is an *Error carrying its HTTP status,
// its gRPC code and the server's message, whichever the transport: a 404
// is an unknown model, a 400 a request the server refused (the message
// says what was wrong), a 429 or 503 an overloaded or unready server, a
// 504 a deadline that passed. The context's deadline is the request's
// deadline on the server too, so that a request the client has given up
// on is dropped from the server's queue rather than computed for no one.
package client
