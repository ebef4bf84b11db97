package client

import (
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/sporeml/spore/serve"
)

// TestStatusOfCode checks that a status sent over gRPC comes back as
// itself wherever serve.GRPCCode is one-to-one, and as the commoner
// status where two share a code.
func TestStatusOfCode(t *testing.T) {
	for _, tc := range []struct{ sent, back int }{
		{400, 400}, {404, 404}, {429, 429}, {499, 499}, {500, 500},
		{501, 501}, {503, 503}, {504, 504},
		{413, 429}, // ResourceExhausted stands for both
		{418, 500}, // anything unmapped is Internal
	} {
		code := serve.GRPCCode(&serve.Error{Status: tc.sent})
		if got := statusOfCode(code); got != tc.back {
			t.Errorf("status %d → %v → %d, want %d", tc.sent, code, got, tc.back)
		}
	}
	if got := statusOfCode(codes.Unauthenticated); got != http.StatusUnauthorized {
		t.Errorf("Unauthenticated → %d", got)
	}
}
