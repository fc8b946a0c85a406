package sparsefac

// LiveObjects exposes the count of unreleased library objects to the external tests.
func LiveObjects() int64 { return liveObjects.Load() }
