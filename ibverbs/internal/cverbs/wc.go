//go:build linux && cgo

package cverbs

// #include <infiniband/verbs.h>
//
// enum {
//	cv_wc_size = sizeof(struct ibv_wc),
//	cv_wc_imm_data = offsetof(struct ibv_wc, imm_data),
// };
import "C"

import "unsafe"

// IBVWCSize is sizeof(struct ibv_wc).
const IBVWCSize = int(C.cv_wc_size)

// IBVWCFields holds where each field of struct ibv_wc lies, by name
// (imm_data shares its place with invalidated_rkey), for a test to craft
// a completion byte by byte.
var IBVWCFields = map[string]Field{
	"wr_id":          {unsafe.Offsetof(C.struct_ibv_wc{}.wr_id), unsafe.Sizeof(C.struct_ibv_wc{}.wr_id)},
	"status":         {unsafe.Offsetof(C.struct_ibv_wc{}.status), unsafe.Sizeof(C.struct_ibv_wc{}.status)},
	"opcode":         {unsafe.Offsetof(C.struct_ibv_wc{}.opcode), unsafe.Sizeof(C.struct_ibv_wc{}.opcode)},
	"vendor_err":     {unsafe.Offsetof(C.struct_ibv_wc{}.vendor_err), unsafe.Sizeof(C.struct_ibv_wc{}.vendor_err)},
	"byte_len":       {unsafe.Offsetof(C.struct_ibv_wc{}.byte_len), unsafe.Sizeof(C.struct_ibv_wc{}.byte_len)},
	"imm_data":       {uintptr(C.cv_wc_imm_data), 4},
	"qp_num":         {unsafe.Offsetof(C.struct_ibv_wc{}.qp_num), unsafe.Sizeof(C.struct_ibv_wc{}.qp_num)},
	"src_qp":         {unsafe.Offsetof(C.struct_ibv_wc{}.src_qp), unsafe.Sizeof(C.struct_ibv_wc{}.src_qp)},
	"wc_flags":       {unsafe.Offsetof(C.struct_ibv_wc{}.wc_flags), unsafe.Sizeof(C.struct_ibv_wc{}.wc_flags)},
	"pkey_index":     {unsafe.Offsetof(C.struct_ibv_wc{}.pkey_index), unsafe.Sizeof(C.struct_ibv_wc{}.pkey_index)},
	"slid":           {unsafe.Offsetof(C.struct_ibv_wc{}.slid), unsafe.Sizeof(C.struct_ibv_wc{}.slid)},
	"sl":             {unsafe.Offsetof(C.struct_ibv_wc{}.sl), unsafe.Sizeof(C.struct_ibv_wc{}.sl)},
	"dlid_path_bits": {unsafe.Offsetof(C.struct_ibv_wc{}.dlid_path_bits), unsafe.Sizeof(C.struct_ibv_wc{}.dlid_path_bits)},
}
