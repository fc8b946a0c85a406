//go:build race

package sparsefac_test

const raceEnabled = true
