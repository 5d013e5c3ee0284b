// Treadle's native header library: the only header generated kernel code includes (with -I .../treadle/native).
// Everything lives in namespace treadle; each forward function sits next to its adj_ function.
#pragma once
#include "core.h"
#include "scalar.h"
#include "vec.h"
#include "mat.h"
#include "atomic.h"
#include "array.h"
#include "print.h"
#include "noise.h"
#include "hashgrid.h"
#include "linalg.h"
#include "quat.h"
#include "transform.h"
#include "spatial.h"
#include "geometry.h"
#include "bvh.h"
#include "mesh.h"
