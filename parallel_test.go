package spore_test

import (
	"strings"
	"testing"

	"github.com/sporeml/spore"
)

func TestAutoParallelContextValidate(t *testing.T) {
	for _, c := range []struct {
		ctx  spore.AutoParallelContext
		want string // "" for valid
	}{
		{spore.AutoParallelContext{}, ""},
		{spore.AutoParallelContext{ParallelMode: spore.DataParallel, GradientsMean: true, BucketBytes: 1 << 20}, ""},
		{spore.AutoParallelContext{ParallelMode: 7}, "unknown parallel mode ParallelMode(7)"},
		{spore.AutoParallelContext{ParallelMode: spore.DataParallel, BucketBytes: -1}, "negative bucket size -1"},
	} {
		err := c.ctx.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: Validate() = %v, want %q", c.ctx, err, c.want)
		}
	}
	if got := (spore.AutoParallelContext{BucketBytes: 4096}).Buckets(); got != 4096 {
		t.Errorf("Buckets() = %d, want 4096", got)
	}
	if got := spore.GetAutoParallelContext(); got != (spore.AutoParallelContext{}) {
		t.Errorf("default context %+v, want stand-alone", got)
	}
}
