package sparsefac

import (
	"testing"

	"github.com/sparsefac/sparsefac/bindings/go/internal/capi"
)

// Reorder's values are not the C codes (its zero must be the default, C's AUTO): the options
// the library gets carry the code of the value the caller chose.
func TestReorderReachesTheLibraryAsItsCode(t *testing.T) {
	for reorder, want := range map[Reorder]capi.Enum_SS_sfac_reorder{
		ReorderAuto:   capi.SFAC_REORDER_AUTO,
		ReorderNone:   capi.SFAC_REORDER_NONE,
		ReorderDegree: capi.SFAC_REORDER_DEGREE,
	} {
		opts, err := DefaultTrainOptions(ALS)
		if err != nil {
			t.Fatal(err)
		}
		opts.Reorder = reorder
		c, err := newCOptions(ALS)
		if err != nil {
			t.Fatal(err)
		}
		v := []int64{-1}
		err = c.apply(&opts)
		if err == nil {
			err = call(func() capi.Enum_SS_sfac_status {
				return capi.Sfac_train_options_get_int(c.h, capi.SFAC_OPT_ALS_REORDER, v)
			})
		}
		c.close()
		if err != nil {
			t.Fatal(err)
		}
		if v[0] != int64(want) {
			t.Fatalf("%v reached the library as %d, want %d", reorder, v[0], want)
		}
	}
}
