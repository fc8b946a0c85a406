/* The C function the library calls after every epoch: forwards to the exported Go dispatcher
 * (callback.go). user_data carries a runtime/cgo.Handle, an integer, never a Go pointer. */
#include <stdint.h>

#include "_cgo_export.h"

int sfac_go_epoch_trampoline(int epoch, double train_loss, double validation_rmse, double seconds,
                             void* user_data) {
  return sfacGoEpoch(epoch, train_loss, validation_rmse, seconds, (uintptr_t)user_data);
}
