package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	cases := []struct {
		name    string
		write   func(io.Writer) error
		wantErr error
		want    string
	}{
		{"a failed write leaves the old file", func(w io.Writer) error {
			w.Write([]byte("half"))
			return boom
		}, boom, "old"},
		{"a whole write replaces it", func(w io.Writer) error {
			_, err := w.Write([]byte("new"))
			return err
		}, nil, "new"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := Write(path, c.write); !errors.Is(err, c.wantErr) {
				t.Fatalf("error %v, want %v", err, c.wantErr)
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != c.want {
				t.Fatalf("file holds %q (%v), want %q", got, err, c.want)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("%d files in the directory, want 1 (no temporary left)", len(entries))
			}
			if fi, err := os.Stat(path); err == nil && c.wantErr == nil && fi.Mode().Perm() != 0o644 {
				t.Errorf("mode %v, want 0644", fi.Mode().Perm())
			}
		})
	}
	if err := WriteFile(filepath.Join(dir, "no", "such", "f"), nil); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

// A writer killed mid-write leaves its temporary file; the next Write of
// the same path removes it, and nothing else: not another target's
// temporaries, not files that only look alike, not a temporary modified
// moments ago or locked by a writer still at work.
func TestWriteRemovesStaleTemporaries(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.ckpt")
	old := time.Now().Add(-2 * time.Hour)
	tests := []struct {
		name   string
		dir    bool // a directory, not a file
		recent bool // modified now, not two hours ago
		locked bool // held by a live writer's lock
		keep   bool
	}{
		{name: ".m.ckpt.tmp-123456", keep: false},
		{name: ".m.ckpt.tmp-42", keep: false},
		{name: ".m.ckpt.tmp-777", recent: true, keep: true},
		{name: ".m.ckpt.tmp-888", locked: true, keep: !lockless},
		{name: ".m.ckpt.tmp-999", dir: true, keep: true},
		{name: ".other.ckpt.tmp-123", keep: true},
		{name: ".m.ckpt.tmp-12a", keep: true},
		{name: ".m.ckpt.tmp-", keep: true},
		{name: "m.ckpt.tmp-123", keep: true},
		{name: ".m.ckpt.tmp-123.bak", keep: true},
		{name: ".m.ckpt2.tmp-123", keep: true},
	}
	for _, tc := range tests {
		p := filepath.Join(dir, tc.name)
		var err error
		if tc.dir {
			err = os.Mkdir(p, 0o755)
		} else {
			err = os.WriteFile(p, []byte("half a checkpoint"), 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
		if tc.locked {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			lockFile(f)
		}
		if !tc.recent {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := WriteFile(path, []byte("whole")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		_, err := os.Lstat(filepath.Join(dir, tc.name))
		if kept := err == nil; kept != tc.keep {
			t.Errorf("%s: kept %v, want %v", tc.name, kept, tc.keep)
		}
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "whole" {
		t.Errorf("the target holds %q (%v)", b, err)
	}
	// The writer's own temporary is renamed, not left.
	entries, _ := os.ReadDir(dir)
	want := 1
	for _, tc := range tests {
		if tc.keep {
			want++
		}
	}
	if len(entries) != want {
		t.Errorf("%d entries in the directory, want %d", len(entries), want)
	}
}

// isTemp matches exactly the names os.CreateTemp gives Write's temporary
// files of one target.
func TestIsTemp(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), tempPrefix("a.safetensors")+"*")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if name := filepath.Base(f.Name()); !isTemp(name, "a.safetensors") || isTemp(name, "a") || isTemp(name, "a.safetensors2") {
		t.Errorf("isTemp(%q) does not tell its target apart", name)
	}
}
