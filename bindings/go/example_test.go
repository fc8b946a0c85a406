package sparsefac_test

import (
	"fmt"
	"log"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

// Train ALS on planted rank-4 ratings, check the held-out error and recommend unseen items.
func Example() {
	ctx, err := sparsefac.NewContext(sparsefac.CPU, sparsefac.WithThreads(1), sparsefac.WithSeed(42))
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()

	ratings, err := sparsefac.SynthesizeRatings(ctx, sparsefac.Synthetic{
		Feedback: sparsefac.Explicit, Users: 300, Items: 200, NNZ: 24000, Rank: 4, Noise: 0.1,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer ratings.Close()
	train, test, err := ratings.SplitRandom(0.2, 1)
	if err != nil {
		log.Fatal(err)
	}
	defer train.Close()
	defer test.Close()

	opts, err := sparsefac.DefaultTrainOptions(sparsefac.ALS)
	if err != nil {
		log.Fatal(err)
	}
	opts.Rank, opts.Iterations = 4, 10
	opts.LambdaUser, opts.LambdaItem = 0.01, 0.01
	model, err := sparsefac.Train(ctx, train, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer model.Close()

	rmse, _, err := model.Evaluate(test)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("held-out RMSE below 0.15:", rmse < 0.15)

	top, err := model.Recommend([]int32{0}, 5, sparsefac.RecommendOptions{Exclude: train})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("top-5 items for user 0:", len(top[0]))
	// Output:
	// held-out RMSE below 0.15: true
	// top-5 items for user 0: 5
}
