//go:build linux && cgo

package ibverbs_test

import (
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// An Endpoint and a RemoteMR after it fit in the 56 bytes of an rdma_cm
// connection request's private data.
func TestEndpointSizeFitsCMRequest(t *testing.T) {
	if n := ibverbs.EndpointSize + ibverbs.RemoteMRSize; n > 56 {
		t.Errorf("EndpointSize + RemoteMRSize = %d, more than a connection request's 56 bytes", n)
	}
}
