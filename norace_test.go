//go:build !race

package spore_test

const raceEnabled = false
