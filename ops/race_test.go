//go:build race

package ops_test

const raceEnabled = true
