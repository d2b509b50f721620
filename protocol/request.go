package protocol

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// request is a decoded request with its header.
type request struct {
	msg           kmsg.Request
	correlationID int32
	clientID      string
	// earlyResponse is set when the reply is known without a handler: an
	// ApiVersions at a version we do not speak, or a request below its
	// API's versions (unsupported_version.go).
	earlyResponse []byte
	// unsupported says that earlyResponse answers UNSUPPORTED_VERSION to a
	// request below its API's versions (logged as such).
	unsupported error
}

// parseRequest decodes a request frame body (without the size prefix). It
// never panics on any input: kbin readers record the first short read.
func parseRequest(body []byte) (req *request, err error) {
	defer func() {
		// kmsg decoders are bounds-checked; this guard keeps a decoder bug
		// from crashing the gateway on hostile input.
		if p := recover(); p != nil {
			req, err = nil, fmt.Errorf("decoder panic on malformed request: %v", p)
		}
	}()
	return decodeRequest(body)
}

// decodeRequest is parseRequest without its guard: FuzzParseRequest calls
// it, so that a decoder panic fails the fuzz target instead of passing as
// an error.
func decodeRequest(body []byte) (*request, error) {
	r := kbin.Reader{Src: body}
	key := r.Int16()
	version := r.Int16()
	corr := r.Int32()
	clientID := r.NullableString()
	if !r.Ok() {
		return nil, fmt.Errorf("short request header (%d bytes)", len(body))
	}
	msg := kmsg.RequestForKey(key)
	if msg == nil {
		return nil, fmt.Errorf("unknown API key %d", key)
	}
	req := &request{msg: msg, correlationID: corr}
	if clientID != nil {
		req.clientID = *clientID
	}
	h, ok := handlers[key]
	if !ok {
		return nil, &clientError{kind: unsupportedKey, err: fmt.Errorf("API key %d (%s) is not supported", key, kmsg.NameForKey(key))}
	}
	if version > h.max || version < 0 {
		if key == kmsg.ApiVersions.Int16() {
			// A client probing with a newer ApiVersions than ours gets
			// UNSUPPORTED_VERSION in v0 form, listing what we speak, and
			// retries with a version we know.
			req.earlyResponse = unsupportedApiVersions(corr)
			return req, nil
		}
		return nil, unsupportedVersionError(unsupportedVersionClosed, key, version, h)
	}
	msg.SetVersion(version)
	if msg.IsFlexible() {
		skipTags(&r)
	}
	if !r.Ok() {
		return nil, fmt.Errorf("%s v%d: short request header", kmsg.NameForKey(key), version)
	}
	if err := msg.ReadFrom(r.Src); err != nil {
		return nil, fmt.Errorf("%s v%d: decode: %w", kmsg.NameForKey(key), version, err)
	}
	if version < h.min {
		resp, ok := unsupportedVersionAnswer(msg)
		if !ok {
			return nil, unsupportedVersionError(unsupportedVersionClosed, key, version, h)
		}
		req.earlyResponse = frameResponse(req, resp, nil)
		req.unsupported = unsupportedVersionError(unsupportedVersion, key, version, h)
	}
	return req, nil
}

func skipTags(r *kbin.Reader) {
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		r.Uvarint() // tag
		size := r.Uvarint()
		r.Span(int(size))
	}
}

func unsupportedApiVersions(corr int32) []byte {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = 35 // UNSUPPORTED_VERSION
	resp.ApiKeys = supportedApiKeys()
	buf := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(buf[4:], uint32(corr))
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}
