//go:build linux && cgo

package ibverbs

// SetRegMRHook makes f run in each RegMR just before it registers the
// memory; restore unsets it.
func SetRegMRHook(f func()) (restore func()) {
	regMRHook.Store(&f)
	return func() { regMRHook.Store(nil) }
}
