package dashboard

import "errors"

// logRun is one run of a log dir as the server uses it: the summary
// reader's Run, decoupled so that the server's answers keep their shape
// whatever the reader adds.
type logRun struct {
	Name       string
	Dir        string
	Scalars    map[string][]scalarPoint
	Histograms map[string][]histogram
	Graphs     []string
	Warnings   []string
}

type scalarPoint struct {
	Step            int64
	WallTime, Value float64
}

type histogram struct {
	Step                                     int64
	WallTime, Min, Max, Num, Sum, SumSquares float64
	BucketLimit, Bucket                      []float64
}

// readSummaries reads the runs of a log dir.
func readSummaries(logdir string) ([]logRun, error) {
	return nil, errors.New("dashboard: reading event files is not available in this build yet")
}
