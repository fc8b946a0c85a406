package sparsefac

// Output and input arrays for the C API. Only a nil slice becomes NULL, which the C API
// rejects for required arrays even when their length is 0; these never return nil.
func floats(n int) []float32 { return make([]float32, n, n+1) }
func int32s(n int) []int32   { return make([]int32, n, n+1) }
func int64s(n int) []int64   { return make([]int64, n, n+1) }

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
