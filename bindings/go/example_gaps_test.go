package sparsefac_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

// Read a ratings file with arbitrary ids and translate ids into matrix indices.
func ExampleIDMap_Lookup() {
	ctx, err := sparsefac.NewContext(sparsefac.CPU, sparsefac.WithThreads(1))
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	dir, err := os.MkdirTemp("", "sfac-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ratings.csv")
	csv := "userId,movieId,rating\n900,31,4\n12,1029,3\n900,1029,5\n"
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		log.Fatal(err)
	}
	m, users, movies, err := sparsefac.ReadFileRemapped(ctx, path, sparsefac.FormatCSV, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	defer users.Close()
	defer movies.Close()
	rows, err := users.Lookup([]int64{900, 12, 5})
	if err != nil {
		log.Fatal(err)
	}
	cols, err := movies.Lookup([]int64{1029, 31})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("users 900, 12, 5 ->", rows)
	fmt.Println("movies 1029, 31 ->", cols)
	// Output:
	// users 900, 12, 5 -> [1 0 -1]
	// movies 1029, 31 -> [1 0]
}

// Analyse a pattern once and reuse the plan for every SDDMM on it.
func ExampleSDDMMWithPlan() {
	ctx, err := sparsefac.NewContext(sparsefac.CPU, sparsefac.WithThreads(1))
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	// S = [[1 0] [0 2] [3 0]], A = 3 x 1, B = 2 x 1.
	s, err := sparsefac.FromCSC(ctx, 3, 2, []int64{0, 2, 3}, []int32{0, 2, 1}, []float32{1, 3, 2}, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	a, err := sparsefac.NewDenseMatrix(ctx, 3, 1, []float32{1, 2, 3})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := sparsefac.NewDenseMatrix(ctx, 2, 1, []float32{10, 100})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	plan, err := sparsefac.NewSDDMMPlan(ctx, s, 1, sparsefac.SDDMMAuto)
	if err != nil {
		log.Fatal(err)
	}
	defer plan.Close()
	p, err := s.Like(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	for _, mode := range []sparsefac.SDDMMMode{sparsefac.Pattern, sparsefac.Scaled} {
		if err := sparsefac.SDDMMWithPlan(ctx, plan, mode, 1, a, b, s, 0, p); err != nil {
			log.Fatal(err)
		}
		v, err := p.Values()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(v)
	}
	// Output:
	// [10 200 30]
	// [10 400 90]
}
