//go:build linux && cgo

package rdmacm

// #cgo pkg-config: librdmacm libibverbs
// #cgo CFLAGS: -O2 -Wall
// #include "shim.h"
import "C"
