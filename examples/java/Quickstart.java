import java.util.Arrays;
import org.sparsefac.Algorithm;
import org.sparsefac.Context;
import org.sparsefac.Data;
import org.sparsefac.Evaluation;
import org.sparsefac.Model;
import org.sparsefac.TopItems;
import org.sparsefac.TrainOptions;

/**
 * Trains ALS on synthetic ratings with a known noise floor, prints the held-out RMSE and the top-5
 * items of user 0.
 *
 * <p>Run from the source file against the jar (which bundles the native libraries):
 *
 * <pre>java -cp build/bindings/java/sparsefac.jar examples/java/Quickstart.java</pre>
 */
public class Quickstart {
  public static void main(String[] args) {
    double noise = 0.5;
    try (Context ctx = Context.cpu(0, 42);
        // 2000 users x 1000 items, 200k ratings from rank-8 planted factors plus N(0, 0.5^2).
        Data.Synthetic data =
            Data.synthesize(ctx, Data.Feedback.EXPLICIT, 2000, 1000, 200_000, 8, noise, 0.3);
        Data.Split split = Data.splitRandom(data.ratings(), 0.1, 1)) {
      TrainOptions options = TrainOptions.builder(Algorithm.ALS)
                                 .rank(8)
                                 .iterations(10)
                                 .lambda(0.02)
                                 .validation(split.test())
                                 .listener(epoch -> {
                                   System.out.printf("epoch %2d  validation RMSE %.4f%n",
                                       epoch.epoch(), epoch.validationRmse());
                                   return false;  // true would stop early
                                 })
                                 .build();
      try (Model model = Model.train(ctx, split.train(), options)) {
        Evaluation test = model.evaluate(split.test());
        System.out.printf("held-out RMSE %.4f (noise floor %.2f), MAE %.4f%n", test.rmse(), noise,
            test.mae());
        TopItems top = model.recommend(0, 5, split.train());
        System.out.println("top-5 items for user 0: " + Arrays.toString(top.items()));
        System.out.println("their scores:           " + Arrays.toString(top.scores()));
        if (!(test.rmse() < 1.2 * noise)) {
          System.err.println("Quickstart: RMSE is more than 20% above the noise floor");
          System.exit(1);
        }
      }
    }
  }
}
