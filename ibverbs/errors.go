package ibverbs

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// ErrClosed is returned by methods of an object after its Close.
// errors.Is(err, os.ErrClosed) and errors.Is(err, net.ErrClosed) also
// hold, as for rdmacm.ErrClosed, so that a loop written for package net's
// connections (one that ends on net.ErrClosed) ends on it too.
var ErrClosed error = closedError{}

type closedError struct{}

func (closedError) Error() string { return "ibverbs: object is closed" }

func (closedError) Is(target error) bool { return target == os.ErrClosed || target == net.ErrClosed }

// verbError wraps an errno returned by verb. errors.Is works with the errno
// (syscall.EBUSY, ...) and with errors.ErrUnsupported for ENOSYS and
// EOPNOTSUPP.
func verbError(verb string, errno int) error {
	if errno == 0 {
		errno = int(syscall.EIO)
	}
	if errno < 0 {
		errno = -errno
	}
	return os.NewSyscallError(verb, syscall.Errno(errno))
}

// errnoOf extracts the errno cgo captured alongside a call's result.
func errnoOf(verb string, err error) error {
	var e syscall.Errno
	if errors.As(err, &e) && e != 0 {
		return os.NewSyscallError(verb, e)
	}
	return os.NewSyscallError(verb, syscall.EIO)
}

// busyError says that an object cannot close while n others depend on
// it: one names a single one of them, many several ("QP using the CQ",
// "QPs using the CQ").
func busyError(verb string, n int64, one, many string) error {
	what, them := many, "them"
	if n == 1 {
		what, them = one, "it"
	}
	return fmt.Errorf("%s: %d %s still open, close %s first: %w", verb, n, what, them,
		os.NewSyscallError(verb, syscall.EBUSY))
}

// WCError is a work completion whose status is not success (WC.Err). Its
// fields are the completion's, the ones the verbs define for a failed
// completion. It wraps its Status, which is an error too, so that
// errors.Is(err, WCRemAccessErr) (or any other status) tells a completion
// that failed for that reason, through any wrapping, and errors.As with a
// *WCStatus takes the status out.
type WCError struct {
	Status    WCStatus // why it failed
	VendorErr uint32   // the device's own error code, for its vendor's documentation
	WRID      uint64   // the failed work request's ID (SendWR.ID, RecvWR.ID)
	QPN       uint32   // the number of the QP whose request it was
	// Opcode is the completion's, which the verbs leave undefined for a
	// failed one: Poll and PollEx give 0 there.
	Opcode WCOpcode
}

// Error returns the status's verbs name and description, the wr_id, QP
// number and vendor error.
func (e *WCError) Error() string {
	return fmt.Sprintf("work completion failed: IBV_WC_%s (%s), wr_id %d, QPN %#x, vendor error %#x",
		e.Status, wcStatusText(e.Status), e.WRID, e.QPN, e.VendorErr)
}

// Unwrap returns the completion's Status, so that errors.Is matches the
// error with its status: errors.Is(err, WCWRFlushErr) holds for a
// completion flushed from a QP in the error state.
func (e *WCError) Unwrap() error { return e.Status }

// Error returns the status's name, as String does, so that the statuses
// are errors that errors.Is can look for in a *WCError (see WCError), and
// print as they always have.
func (s WCStatus) Error() string { return s.String() }

// wcStatusText says what each status means (ibv_poll_cq(3)), for
// WCError's message.
func wcStatusText(s WCStatus) string {
	switch s {
	case WCSuccess:
		return "success"
	case WCLocLenErr:
		return "local length error"
	case WCLocQPOpErr:
		return "local QP operation error"
	case WCLocEECOpErr:
		return "local EE context operation error (reliable datagram)"
	case WCLocProtErr:
		return "local protection error"
	case WCWRFlushErr:
		return "work request flushed: the QP is in the error state"
	case WCMWBindErr:
		return "memory window bind error: the MR lacks AccessMWBind, or the window, range or access is wrong for it, or the QP is of another PD"
	case WCBadRespErr:
		return "bad response"
	case WCLocAccessErr:
		return "local access error"
	case WCRemInvReqErr:
		return "remote invalid request error"
	case WCRemAccessErr:
		return "remote access error: bad rkey, address or permissions"
	case WCRemOpErr:
		return "remote operation error"
	case WCRetryExcErr:
		return "transport retry counter exceeded: the peer does not answer"
	case WCRNRRetryExcErr:
		return "RNR retry counter exceeded: the peer posted no receive"
	case WCLocRDDViolErr:
		return "local RDD violation: the QP and the EE context are in different RD domains (reliable datagram)"
	case WCRemInvRdReqErr:
		return "remote invalid RD request: the responder refused a reliable datagram message"
	case WCRemAbortErr:
		return "remote aborted error: the responder aborted the operation"
	case WCInvEECNErr:
		return "invalid EE context number (reliable datagram)"
	case WCInvEECStateErr:
		return "invalid EE context state (reliable datagram)"
	case WCFatalErr:
		return "fatal error"
	case WCRespTimeoutErr:
		return "response timeout"
	case WCGeneralErr:
		return "general error"
	case WCTMErr:
		return "tag matching error: a tag operation on the SRQ failed"
	case WCTMRndvIncomplete:
		return "tag matching rendezvous incomplete: the message matched a tag, but the device did not fetch its data"
	}
	return "unknown status"
}

// PostError reports a post that stopped at the work request at Index: the
// ones before it were posted, it and those after were not.
type PostError struct {
	Index int   // the first request not posted: its index in the list, or the batch
	Err   error // why: the verb's error (an *os.SyscallError) or the binding's
}

// Error returns Err's message and Index.
func (e *PostError) Error() string {
	return fmt.Sprintf("%v (at work request %d)", e.Err, e.Index)
}

// Unwrap returns Err, so that errors.Is sees its errno.
func (e *PostError) Unwrap() error { return e.Err }
