// Package good passes.
package good

// #include <stdlib.h>
import "C"

// Kind is a kind.
type Kind int

// Kinds, documented by the group's comment.
const (
	KindA Kind = iota
	KindB
)

const (
	// KindC has its own comment.
	KindC Kind = 10
	KindD Kind = 11 // a line comment
)

// Thing is a thing.
type (
	// Inner is documented in its group.
	Inner struct{}
)

// Thing is a thing.
type Thing struct{}

// String returns "thing".
func (Thing) String() string { return "thing" }

// CreateQP makes one (ibv_create_qp_ex, or ibv_create_qp: rdma_create_qp).
func (*Thing) CreateQP() {
	C.ibv_create_qp(nil)
	f := func() { C.ibv_create_qp_ex(nil) }
	f()
	C.gv_helper() // a shim's: not counted
}

// Max, documented alone.
var Max = 1

// Version: the doc may go on with punctuation after the name.
const Version = "1"

func unexported() {}
