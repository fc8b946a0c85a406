package sparsefac

import (
	"math"
	"runtime"

	"github.com/sparsefac/sparsefac/bindings/go/internal/capi"
)

// Model is a trained factorization: users x rank and items x rank factors (plus biases when
// trained with UseBiases).
type Model struct {
	ref handle[capi.SwigcptrStruct_SS_sfac_model]
}

func newModel(h uintptr) *Model {
	m := &Model{}
	m.ref.init(capi.SwigcptrStruct_SS_sfac_model(h), func(h capi.SwigcptrStruct_SS_sfac_model) capi.Enum_SS_sfac_status {
		return capi.Sfac_model_destroy(h)
	})
	runtime.SetFinalizer(m, func(m *Model) { m.Close() })
	return m
}

// Close releases the model (once calls in flight on other goroutines are done); later calls
// are no-ops.
func (m *Model) Close() error {
	if m == nil {
		return nil
	}
	return m.ref.close()
}

func (m *Model) acquire() (capi.SwigcptrStruct_SS_sfac_model, error) {
	if m == nil {
		return 0, closedError("Model")
	}
	return m.ref.acquire("Model")
}

func (m *Model) release() { m.ref.release() }

func modelShape(h capi.SwigcptrStruct_SS_sfac_model) (users, items, rank int, err error) {
	u, i, r := []int64{0}, []int64{0}, []int64{0}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_model_get_shape(h, u, i, r) })
	return int(u[0]), int(i[0]), int(r[0]), err
}

// LoadModel reads a model file written by Save (from any language binding).
func LoadModel(ctx *Context, path string) (*Model, error) {
	c, err := ctx.acquire()
	if err != nil {
		return nil, err
	}
	defer ctx.release()
	var h uintptr
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_model_load(c, path, &h) })
	if err != nil {
		return nil, err
	}
	return newModel(h), nil
}

// Save writes the versioned binary model file.
func (m *Model) Save(path string) error {
	h, err := m.acquire()
	if err != nil {
		return err
	}
	defer m.release()
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_model_save(h, path) })
	return err
}

// ExportLIBMF writes the model in LIBMF's text model format ("f", "m", "n", "k", "b" header
// lines, then one "p<u> T ..." line per user and one "q<i> T ..." line per item). With biases
// k is rank + 2: two extra columns carry global mean + user bias and item bias into LIBMF's
// dot product.
func (m *Model) ExportLIBMF(path string) error {
	h, err := m.acquire()
	if err != nil {
		return err
	}
	defer m.release()
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_model_export_libmf(h, path) })
	return err
}

// Shape is (users, items, rank).
func (m *Model) Shape() (users, items, rank int, err error) {
	h, err := m.acquire()
	if err != nil {
		return 0, 0, 0, err
	}
	defer m.release()
	return modelShape(h)
}

// UserFactors copies the users x rank row-major user factors.
func (m *Model) UserFactors() ([]float32, error) {
	h, err := m.acquire()
	if err != nil {
		return nil, err
	}
	defer m.release()
	users, _, rank, err := modelShape(h)
	if err != nil {
		return nil, err
	}
	out := floats(users * rank)
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_model_get_user_factors(h, out, int64(len(out))) })
	return out, err
}

// ItemFactors copies the items x rank row-major item factors.
func (m *Model) ItemFactors() ([]float32, error) {
	h, err := m.acquire()
	if err != nil {
		return nil, err
	}
	defer m.release()
	_, items, rank, err := modelShape(h)
	if err != nil {
		return nil, err
	}
	out := floats(items * rank)
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_model_get_item_factors(h, out, int64(len(out))) })
	return out, err
}

// SetUserFactors replaces the user factors (users*rank finite values).
func (m *Model) SetUserFactors(f []float32) error {
	h, err := m.acquire()
	if err != nil {
		return err
	}
	defer m.release()
	users, _, rank, err := modelShape(h)
	if err != nil {
		return err
	}
	if len(f) != users*rank {
		return errorf(StatusShapeMismatch, "SetUserFactors: %d users x rank %d needs %d values, got %d", users, rank, users*rank, len(f))
	}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_model_set_user_factors(h, nonNilF(f)) })
	return err
}

// SetItemFactors replaces the item factors (items*rank finite values).
func (m *Model) SetItemFactors(f []float32) error {
	h, err := m.acquire()
	if err != nil {
		return err
	}
	defer m.release()
	_, items, rank, err := modelShape(h)
	if err != nil {
		return err
	}
	if len(f) != items*rank {
		return errorf(StatusShapeMismatch, "SetItemFactors: %d items x rank %d needs %d values, got %d", items, rank, items*rank, len(f))
	}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_model_set_item_factors(h, nonNilF(f)) })
	return err
}

// Biases of a model trained with UseBiases.
type Biases struct {
	GlobalMean float32
	User       []float32
	Item       []float32
}

// Biases returns the model's biases, or ok = false when it has none.
func (m *Model) Biases() (b Biases, ok bool, err error) {
	h, err := m.acquire()
	if err != nil {
		return b, false, err
	}
	defer m.release()
	users, items, _, err := modelShape(h)
	if err != nil {
		return b, false, err
	}
	has, mean := []int32{0}, []float32{0}
	b.User, b.Item = floats(users), floats(items)
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_model_get_biases(h, has, mean, b.User, int64(len(b.User)), b.Item, int64(len(b.Item)))
	})
	if err != nil || has[0] == 0 {
		return Biases{}, false, err
	}
	b.GlobalMean = mean[0]
	return b, true, nil
}

// Predict scores the pairs (users[i], items[i]).
func (m *Model) Predict(users, items []int32) ([]float32, error) {
	h, err := m.acquire()
	if err != nil {
		return nil, err
	}
	defer m.release()
	if len(users) != len(items) {
		return nil, errorf(StatusShapeMismatch, "Predict: %d users but %d items", len(users), len(items))
	}
	scores := floats(len(users))
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_model_predict(h, int64(len(users)), nonNil(users), nonNil(items), scores)
	})
	if err != nil {
		return nil, err
	}
	return scores, nil
}

// Evaluate is the RMSE and MAE of the model on the nonzeros of ratings.
func (m *Model) Evaluate(ratings *SparseMatrix) (rmse, mae float64, err error) {
	h, err := m.acquire()
	if err != nil {
		return 0, 0, err
	}
	defer m.release()
	rh, err := ratings.acquire()
	if err != nil {
		return 0, 0, err
	}
	defer ratings.release()
	r, a := []float64{0}, []float64{0}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_model_evaluate(h, rh, r, a) })
	return r[0], a[0], err
}

// RankingMetrics are averages over the users with test items.
type RankingMetrics struct {
	Precision, Recall, NDCG, MAP float64
}

// RankingMetrics compares each test user's top-k items (never those in exclude, which may be
// nil) with the user's test items.
func (m *Model) RankingMetrics(exclude, test *SparseMatrix, k int) (RankingMetrics, error) {
	var out RankingMetrics
	h, err := m.acquire()
	if err != nil {
		return out, err
	}
	defer m.release()
	eh, err := acquireOptional(exclude)
	if err != nil {
		return out, err
	}
	defer exclude.release()
	th, err := test.acquire()
	if err != nil {
		return out, err
	}
	defer test.release()
	p, r, n, a := []float64{0}, []float64{0}, []float64{0}, []float64{0}
	err = call(func() capi.Enum_SS_sfac_status { return capi.Sfac_model_ranking_metrics(h, eh, th, k, p, r, n, a) })
	if err != nil {
		return out, err
	}
	return RankingMetrics{Precision: p[0], Recall: r[0], NDCG: n[0], MAP: a[0]}, nil
}

// ItemScore is one recommended or similar item.
type ItemScore struct {
	Item  int32
	Score float32
}

// RecommendOptions narrow the candidates of Recommend.
type RecommendOptions struct {
	// Exclude (users x items, may be nil): its nonzeros are never recommended, e.g. the
	// training ratings.
	Exclude *SparseMatrix
	// Allowed (may be nil): only these items are candidates.
	Allowed []int32
}

// Recommend returns the top n items of each user, best first (fewer when fewer candidates).
func (m *Model) Recommend(users []int32, n int, opts RecommendOptions) ([][]ItemScore, error) {
	h, err := m.acquire()
	if err != nil {
		return nil, err
	}
	defer m.release()
	eh, err := acquireOptional(opts.Exclude)
	if err != nil {
		return nil, err
	}
	defer opts.Exclude.release()
	if n < 0 {
		return nil, errorf(StatusInvalidArgument, "Recommend: n = %d is negative", n)
	}
	items := int32s(len(users) * n)
	scores := floats(len(users) * n)
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_model_recommend(h, int64(len(users)), nonNil(users), n, eh, int64(len(opts.Allowed)),
			opts.Allowed, items, scores, sharedCapacity(len(items), len(scores)))
	})
	if err != nil {
		return nil, err
	}
	return rows(items, scores, len(users), n), nil
}

// SimilarItems returns, for each item, the n items with the most similar factors (cosine),
// best first, the item itself excluded.
func (m *Model) SimilarItems(items []int32, n int) ([][]ItemScore, error) {
	h, err := m.acquire()
	if err != nil {
		return nil, err
	}
	defer m.release()
	if n < 0 {
		return nil, errorf(StatusInvalidArgument, "SimilarItems: n = %d is negative", n)
	}
	outItems := int32s(len(items) * n)
	scores := floats(len(items) * n)
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_model_similar_items(h, int64(len(items)), nonNil(items), n, outItems, scores,
			sharedCapacity(len(outItems), len(scores)))
	})
	if err != nil {
		return nil, err
	}
	return rows(outItems, scores, len(items), n), nil
}

// rows splits the C layout (count rows of n) and drops the -1 padding slots.
func rows(items []int32, scores []float32, count, n int) [][]ItemScore {
	out := make([][]ItemScore, count)
	for r := 0; r < count; r++ {
		row := make([]ItemScore, 0, n)
		for j := 0; j < n; j++ {
			it := items[r*n+j]
			if it < 0 || math.IsInf(float64(scores[r*n+j]), -1) {
				break
			}
			row = append(row, ItemScore{Item: it, Score: scores[r*n+j]})
		}
		out[r] = row
	}
	return out
}

// RecalculateUser folds a user's ratings in against the fixed item factors (the model's
// training objective, no retraining) and returns the rank factors (and the bias, 0 without
// biases). With user >= 0 the model's row for that user is replaced too; user = -1 only
// computes (a new user).
func (m *Model) RecalculateUser(user int32, items []int32, ratings []float32) (factors []float32, bias float32, err error) {
	h, err := m.acquire()
	if err != nil {
		return nil, 0, err
	}
	defer m.release()
	_, _, rank, err := modelShape(h)
	if err != nil {
		return nil, 0, err
	}
	if len(items) != len(ratings) {
		return nil, 0, errorf(StatusShapeMismatch, "RecalculateUser: %d items but %d ratings", len(items), len(ratings))
	}
	factors = floats(rank)
	b := []float32{0}
	err = call(func() capi.Enum_SS_sfac_status {
		return capi.Sfac_model_recalculate_user(h, int(user), int64(len(items)), nonNil(items), nonNilF(ratings),
			factors, int64(len(factors)), b)
	})
	if err != nil {
		return nil, 0, err
	}
	return factors, b[0], nil
}
