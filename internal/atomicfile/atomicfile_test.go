package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
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
