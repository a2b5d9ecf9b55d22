package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A stripped HTML page that arrives whole soon enough is read whole and
// sent with its new length, in as few writes as the server's buffering
// allows. Spark renders a page before it sends a byte of it: with its
// length when it fits Jetty's 32 KiB output buffer, chunked when longer.
// Streamed as it is stripped, a page would go out chunked and, its length
// unknown, with a flush after every read (ReverseProxy's rule for a body
// of unknown length): a write(2) and a chunk per piece. A page longer than
// wholePageMax, one still arriving wholePageWait after its header, or one
// that finds pageBudget spent, is passed on as it comes, in bounded memory.
const (
	wholePageMax  = 512 << 10
	wholePageWait = 50 * time.Millisecond
)

// pagePool holds the buffers pages are read ahead into; one grown past
// twice wholePageMax is not kept.
var pagePool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

var errPageClosed = errors.New("page body closed")

// pageBudget bounds the memory of all the pages held whole at once: a
// user can open many requests to a driver of their own, each for a page
// of wholePageMax. A page that finds the budget spent streams.
var pageBudget int64 = 64 << 20

// pagesHeld is what the pages held whole have reserved of pageBudget.
var pagesHeld atomic.Int64

func holdPage(n int64) bool {
	if pagesHeld.Add(n) > pageBudget {
		pagesHeld.Add(-n)
		return false
	}
	return true
}

// sendWhole makes resp's transformed body a whole page where that can be
// done (see above); false means it streams, unchanged. An error is one
// reading the page, before any byte of the answer is sent.
func sendWhole(resp *http.Response) (bool, error) {
	n := resp.ContentLength
	if n > wholePageMax {
		return false, nil
	}
	held := int64(wholePageMax)
	if n >= 0 {
		held = n + barRoom
	}
	if !holdPage(held) {
		return false, nil
	}
	if n >= 0 {
		return true, readWholePage(resp, held)
	}
	return true, readAhead(resp.Request.Context(), resp, held)
}

// barRoom is room for what the page grows by: the back bar.
const barRoom = 1024

// readWholePage replaces the transformed body of resp, whose upstream
// announced its length (its page is whole at the upstream), with the
// whole output read at once and announced with its length. held is what
// it reserved of pageBudget.
func readWholePage(resp *http.Response, held int64) error {
	buf := pagePool.Get().(*bytes.Buffer)
	buf.Reset()
	buf.Grow(int(held))
	_, err := buf.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		pagePool.Put(buf)
		pagesHeld.Add(-held)
		resp.Body = http.NoBody // closed again by the reverse proxy
		return err
	}
	setPage(resp, buf, held)
	return nil
}

// setPage makes buf, a whole page, resp's body, with its length.
func setPage(resp *http.Response, buf *bytes.Buffer, held int64) {
	pb := &pageBody{buf: buf, held: held}
	pb.Reset(buf.Bytes())
	resp.Body = pb
	resp.ContentLength = int64(buf.Len())
	resp.Header.Set("Content-Length", strconv.Itoa(buf.Len()))
}

// readAhead reads resp's (transformed) body of unknown length ahead, in a
// goroutine (a page in chunks may pause between them), until it ends,
// wholePageMax of it is read, wholePageWait has passed or the request is
// gone. A page that ended is sent whole, with its length; a read error
// before that is returned before any byte of the answer is sent, so the
// client gets the gateway's error page rather than a page cut short that
// says 200. Otherwise the body streams on from what was read.
func readAhead(ctx context.Context, resp *http.Response, held int64) error {
	a := &aheadBody{src: resp.Body, buf: pagePool.Get().(*bytes.Buffer), decided: make(chan struct{}), held: held}
	a.buf.Reset()
	a.cond.L = &a.mu
	// From here on the producer alone reads and closes the source; the
	// reverse proxy closes resp.Body, now a, even when this fails.
	resp.Body = a
	startProduce(a)
	t := time.NewTimer(wholePageWait)
	select {
	case <-a.decided:
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
	if err := ctx.Err(); err != nil {
		return err
	}
	a.mu.Lock()
	err := a.err
	a.mu.Unlock()
	switch {
	case errors.Is(err, io.EOF):
		// The producer is done with buf: it is the page's alone, and so
		// is what a reserved.
		setPage(resp, a.buf, a.held)
		a.held = 0
		return nil
	case err != nil:
		return err
	}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return nil
}

// produce runs on a read-ahead worker that has run one before, when one
// is idle, rather than on a new goroutine per page: the stripper needs a
// deeper stack than a goroutine starts with, and growing it (a copy) cost
// as much as the rest of reading ahead (a profile of
// BenchmarkServeAppHTML/kill20-chunked). A worker idle for aheadIdle
// exits, so there are as many as pages were read ahead at once, lately.
var aheadJobs = make(chan *aheadBody)

const aheadIdle = 10 * time.Second

// startProduce has an idle worker, or a new one, run a.produce.
func startProduce(a *aheadBody) {
	select {
	case aheadJobs <- a:
	default:
		go aheadWorker(a)
	}
}

// aheadWorker runs a.produce, then the pages it is handed, until it has
// been idle for aheadIdle.
func aheadWorker(a *aheadBody) {
	idle := time.NewTimer(aheadIdle)
	defer idle.Stop()
	for {
		a.produce()
		idle.Reset(aheadIdle)
		select {
		case a = <-aheadJobs:
		case <-idle.C:
			return
		}
	}
}

// aheadBody is a page being read ahead by produce and read on by the
// reverse proxy: a pipe holding at most wholePageMax (plus one read).
type aheadBody struct {
	src     io.ReadCloser
	mu      sync.Mutex
	cond    sync.Cond     // signals buf, err and closed changing
	buf     *bytes.Buffer // read from src, not yet handed out
	err     error         // src's error once it failed or ended (io.EOF)
	closed  bool
	decided chan struct{} // closed once err is set or buf holds wholePageMax
	once    sync.Once
	held    int64 // of pageBudget, given back at Close
}

// produce reads src into buf until src ends or fails or the body is
// closed, and then closes src (only it touches src).
func (a *aheadBody) produce() {
	bp := chunkPool.Get().(*[]byte)
	defer chunkPool.Put(bp)
	defer func() { _ = a.src.Close() }()
	for {
		n, err := a.src.Read(*bp)
		a.mu.Lock()
		for a.buf.Len() >= wholePageMax && !a.closed {
			a.cond.Wait()
		}
		if a.closed {
			a.mu.Unlock()
			return
		}
		a.buf.Write((*bp)[:n])
		if err != nil {
			a.err = err
		}
		if err != nil || a.buf.Len() >= wholePageMax {
			a.once.Do(func() { close(a.decided) })
		}
		a.cond.Broadcast()
		a.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (a *aheadBody) Read(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.buf.Len() == 0 && a.err == nil && !a.closed {
		a.cond.Wait()
	}
	switch {
	case a.closed:
		return 0, errPageClosed
	case a.buf.Len() > 0:
		n, _ := a.buf.Read(p)
		a.cond.Broadcast()
		return n, nil
	}
	return 0, a.err
}

// Close ends the reading: produce stops at its current read of src (the
// request's end, or the client's, ends that read) and closes src. buf is
// not pooled: produce may still hold it.
func (a *aheadBody) Close() error {
	a.mu.Lock()
	if !a.closed {
		pagesHeld.Add(-a.held)
	}
	a.closed = true
	a.cond.Broadcast()
	a.mu.Unlock()
	return nil
}

// pageBody is a whole stripped page; Close returns its buffer to pagePool.
type pageBody struct {
	bytes.Reader
	buf  *bytes.Buffer
	held int64 // of pageBudget, given back at Close
}

func (p *pageBody) Close() error {
	if p.buf != nil {
		pagesHeld.Add(-p.held)
		p.Reset(nil)
		if p.buf.Cap() <= 2*wholePageMax {
			pagePool.Put(p.buf)
		}
		p.buf = nil
	}
	return nil
}
