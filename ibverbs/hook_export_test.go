//go:build linux && cgo

package ibverbs

import "unsafe"

// SetRegMRHook makes f run in each RegMR just before it registers the
// memory; restore unsets it.
func SetRegMRHook(f func()) (restore func()) {
	regMRHook.Store(&f)
	return func() { regMRHook.Store(nil) }
}

// SetDetachedHook makes f run in each Context.Close once the handle has
// left its device's state, with the device's struct ibv_context, before
// the device is closed; restore unsets it.
func SetDetachedHook(f func(raw unsafe.Pointer)) (restore func()) {
	detachedHook.Store(&f)
	return func() { detachedHook.Store(nil) }
}

// SetPostBindHook makes f run in each post of OpBindMW requests once they
// are checked, just before they are posted; restore unsets it.
func SetPostBindHook(f func()) (restore func()) {
	postBindHook.Store(&f)
	return func() { postBindHook.Store(nil) }
}
