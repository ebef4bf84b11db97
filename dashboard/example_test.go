package dashboard_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/sporeml/spore/dashboard"
)

// A dashboard over a log dir that training has not created yet: the
// server starts, and says so on the console and on the page.
func Example() {
	logdir := filepath.Join(os.TempDir(), "spore-example-no-such-logdir")
	s, err := dashboard.New(logdir)
	if err != nil {
		fmt.Println(err)
		return
	}
	ln, err := dashboard.Listen("127.0.0.1:0") // any free port; the default is 127.0.0.1:6006
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	go s.Serve(ln)

	msg, ok := s.Status()
	fmt.Println(ok, msg == "log dir "+s.Logdir()+" does not exist (yet): runs appear here once a writer creates it (spore train --summary-dir "+s.Logdir()+")")

	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		fmt.Println(err)
		return
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, len(page) > 0)
	// Output:
	// false true
	// 200 true
}
