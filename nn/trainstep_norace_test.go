//go:build !race

package nn_test

const tsRace = false
