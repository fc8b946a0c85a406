package sparsefac

// Output and input arrays for the C API. Only a nil slice becomes NULL, which the C API
// rejects for required arrays even when their length is 0; these never return nil.
func floats(n int) []float32 { return make([]float32, n, n+1) }
func int32s(n int) []int32   { return make([]int32, n, n+1) }
func int64s(n int) []int64   { return make([]int64, n, n+1) }

// sharedCapacity is the C API's capacity for output arrays that share one (COO's three
// arrays, the indices and values of CSR, ...): the shortest of their lengths. Pass the lengths
// of the non-nil arrays only; a nil slice is NULL, whose capacity the library ignores. Every
// output array's capacity is its real length, so a short one is StatusBufferTooSmall, never an
// overrun.
func sharedCapacity(lengths ...int) int64 {
	if len(lengths) == 0 {
		return 0
	}
	shortest := lengths[0]
	for _, n := range lengths[1:] {
		if n < shortest {
			shortest = n
		}
	}
	return int64(shortest)
}

// nonNil and nonNilF pass a caller's possibly nil, empty slice as an empty non-NULL array.
func nonNil(s []int32) []int32 {
	if s == nil {
		return int32s(0)
	}
	return s
}

func nonNilF(s []float32) []float32 {
	if s == nil {
		return floats(0)
	}
	return s
}
