package bad

// #include <stdlib.h>
import "C"

type Undocumented int

// A Thing is what a type's doc must not start with.
type Thing struct{}

func Loose() {}

// does nothing, and says so without its name.
func Unnamed() {}

// CreateIDX is a longer name than the function's.
func CreateID() {}

func (Thing) String() string { return "" }

// Close frees it: its doc names ibv_create_qp_ex alone.
func (t *Thing) Close() error {
	go func() { C.ibv_create_qp(nil) }()
	C.ibv_create_qp_ex(nil)
	return nil
}

const (
	// (a comment inside the group, on nothing)

	Alone = 1
)

// Lonely is documented; Other is in the same undocumented spec.
var Lonely, Other = 1, 2

// something else first.
const Solo = 3

var Bare = 4

// thing is unexported: its exported method is not linted.
type thing struct{}

func (thing) Exported() { C.rdma_create_id(nil) }
