// Quickstart: train ALS on synthetic ratings with a planted rank-4 structure, report the
// held-out RMSE (the planted noise, 0.1, is the floor) and recommend five unseen items.
//
//	cd examples/go && PKG_CONFIG_PATH=<build>/bindings/go/pkgconfig go run ./quickstart
package main

import (
	"fmt"
	"log"

	sparsefac "github.com/sparsefac/sparsefac/bindings/go"
)

func main() {
	ctx, err := sparsefac.NewContext(sparsefac.CPU, sparsefac.WithSeed(42))
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	device, err := ctx.DeviceName()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("sparsefac %s on %s\n", sparsefac.Version(), device)

	ratings, err := sparsefac.SynthesizeRatings(ctx, sparsefac.Synthetic{
		Feedback: sparsefac.Explicit, Users: 2000, Items: 1000, NNZ: 100000, Rank: 4, Noise: 0.1, Skew: 0.5,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer ratings.Close()
	train, test, err := ratings.SplitRandom(0.1, 1)
	if err != nil {
		log.Fatal(err)
	}
	defer train.Close()
	defer test.Close()

	opts, err := sparsefac.DefaultTrainOptions(sparsefac.ALS)
	if err != nil {
		log.Fatal(err)
	}
	opts.Rank = 4
	opts.Iterations = 10
	opts.LambdaUser, opts.LambdaItem = 0.01, 0.01
	opts.Validation = test
	opts.OnEpoch = func(e sparsefac.EpochInfo) (bool, error) {
		fmt.Printf("epoch %2d  loss %.4f  validation RMSE %.4f\n", e.Epoch, e.TrainLoss, e.ValidationRMSE)
		return false, nil
	}
	model, err := sparsefac.Train(ctx, train, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer model.Close()

	rmse, mae, err := model.Evaluate(test)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("held-out RMSE %.4f (MAE %.4f; planted noise 0.1)\n", rmse, mae)
	if rmse > 0.2 {
		log.Fatalf("held-out RMSE %.4f is far above the noise floor 0.1", rmse)
	}

	top, err := model.Recommend([]int32{0}, 5, sparsefac.RecommendOptions{Exclude: train})
	if err != nil {
		log.Fatal(err)
	}
	items := make([]int32, len(top[0]))
	for i, r := range top[0] {
		items[i] = r.Item
	}
	fmt.Printf("top-5 items for user 0: %v\n", items)
	for _, r := range top[0] {
		fmt.Printf("  item %4d  score %.3f\n", r.Item, r.Score)
	}
}
