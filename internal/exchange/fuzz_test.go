package exchange

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

// The seeds of every target are also kept, with some malformed inputs, in
// testdata/fuzz/<Target>/ (see corpus_test.go).

// fuzzPayload fuzzes the payload decoder of one message type: it must not
// panic, must fail only with ErrMalformed, and whatever it decodes must
// re-encode to the same bytes and decode to the same value.
func fuzzPayload[T Message](f *testing.F, decode func([]byte) (T, error)) {
	for _, s := range payloadSeeds[T]() {
		f.Add(s.b)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		m, err := decode(p)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		b := m.AppendPayload(nil)
		if !bytes.Equal(b, p) {
			t.Fatalf("%+v re-encodes as\n%x, not\n%x", m, b, p)
		}
		m2, err := decode(b)
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-decoding %+v: %+v, %v", m, m2, err)
		}
		if _, err := AppendFrame(nil, m); err != nil {
			t.Fatalf("decoded %+v cannot be framed: %v", m, err)
		}
	})
}

func FuzzDecodeHello(f *testing.F)  { fuzzPayload(f, decodeHello) }
func FuzzDecodeSpec(f *testing.F)   { fuzzPayload(f, decodeSpec) }
func FuzzDecodeSetup(f *testing.F)  { fuzzPayload(f, decodeSetup) }
func FuzzDecodeSync(f *testing.F)   { fuzzPayload(f, decodeSync) }
func FuzzDecodeResult(f *testing.F) { fuzzPayload(f, decodeResult) }
func FuzzDecodeError(f *testing.F)  { fuzzPayload(f, decodeErrorMsg) }

// FuzzDecodeFrame: DecodeFrame and ReadFrame agree, and a decoded frame
// re-encodes to the same bytes.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range frameSeeds() {
		f.Add(s.b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeFrame(b)
		rm, rerr := ReadFrame(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			if rerr == nil && len(b) == HeaderLen+int(b[2])<<8+int(b[3]) {
				t.Fatalf("ReadFrame accepts what DecodeFrame refuses (%v): %+v", err, rm)
			}
			return
		}
		if rerr != nil || !reflect.DeepEqual(m, rm) {
			t.Fatalf("DecodeFrame %+v, ReadFrame %+v, %v", m, rm, rerr)
		}
		out, err := AppendFrame(nil, m)
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("%+v re-encodes as %x, %v", m, out, err)
		}
	})
}

// FuzzRecv feeds a byte stream to a Conn: Handshake and Recv must not
// panic, and the frames received, Alives included (which Recv skips),
// must be exactly a prefix of the stream.
func FuzzRecv(f *testing.F) {
	for _, s := range streamSeeds() {
		f.Add(s.b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		Handshake(t.Context(), bytesConn(b), "fuzz")

		c := bytesConn(b)
		frame := func() (Message, error) {
			c.rmu.Lock()
			defer c.rmu.Unlock()
			return c.recvFrame(t.Context())
		}
		var again []byte
		for {
			m, err := frame()
			if err != nil {
				if _, err2 := frame(); err2 == nil {
					t.Fatalf("recv after %v succeeded", err)
				}
				break
			}
			again, err = AppendFrame(again, m)
			if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.HasPrefix(b, again) {
			t.Fatalf("received frames re-encode as %x, not a prefix of %x", again, b)
		}
		if _, err := frame(); err == nil || errors.Is(err, io.EOF) && len(again) != len(b) {
			t.Fatalf("stream of %d bytes, %d framed, then %v", len(b), len(again), err)
		}
	})
}
