#include "sfac_test.h"
