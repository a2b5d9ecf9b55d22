package proxy

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// wholePageMax is the largest announced length of an HTML page that is
// read and stripped whole before its answer starts. Spark's Jetty renders
// a page into one buffer and sends it with its length; passing it on the
// same way (stripped, with its new length, in as few writes as the
// server's buffering allows) costs the client no latency and spares the
// gateway a chunked answer: a write(2) per piece the stripper hands out,
// and the chunks' framing. A longer page, or one of unknown length (a
// stream), is stripped as it flows, in bounded memory.
const wholePageMax = 512 << 10

// pagePool holds the buffers whole pages are stripped into; a buffer grown
// past wholePageMax (a page that grew when stripped) is not kept.
var pagePool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readWholePage replaces the transformed body of resp (its upstream length
// n known and at most wholePageMax) with the whole output read at once,
// announced with its length. An error reading it is returned, before any
// byte of the answer is sent: the client gets the gateway's error page
// rather than a page cut short.
func readWholePage(resp *http.Response, n int64) error {
	buf := pagePool.Get().(*bytes.Buffer)
	buf.Reset()
	buf.Grow(int(n) + 1024) // room for the back bar
	_, err := buf.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		releasePage(buf)
		return err
	}
	resp.Body = &pageBody{Reader: bytes.NewReader(buf.Bytes()), buf: buf}
	resp.ContentLength = int64(buf.Len())
	resp.Header.Set("Content-Length", strconv.Itoa(buf.Len()))
	return nil
}

func releasePage(buf *bytes.Buffer) {
	if buf.Cap() <= 2*wholePageMax {
		pagePool.Put(buf)
	}
}

// pageBody is a whole stripped page; Close returns its buffer to pagePool.
type pageBody struct {
	*bytes.Reader
	buf *bytes.Buffer
}

func (p *pageBody) Close() error {
	if p.buf != nil {
		p.Reset(nil)
		releasePage(p.buf)
		p.buf = nil
	}
	return nil
}

var _ io.ReadCloser = (*pageBody)(nil)
