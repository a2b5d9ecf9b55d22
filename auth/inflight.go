package auth

import "sync"

// inflight runs one refresh per session at a time: the Spark UI fires many
// requests at once, and a rotated refresh token can be used only once.
type inflight struct {
	mu    sync.Mutex
	calls map[[32]byte]*inflightCall
}

type inflightCall struct {
	done chan struct{}
	s    *session
	err  error
}

// do runs f for key unless a call for key is running, in which case it
// waits for that call and shares its result.
func (g *inflight) do(key [32]byte, f func() (*session, error)) (*session, error) {
	g.mu.Lock()
	if c, ok := g.calls[key]; ok {
		g.mu.Unlock()
		<-c.done
		return c.s, c.err
	}
	if g.calls == nil {
		g.calls = make(map[[32]byte]*inflightCall)
	}
	c := &inflightCall{done: make(chan struct{})}
	g.calls[key] = c
	g.mu.Unlock()

	c.s, c.err = f()
	g.mu.Lock()
	delete(g.calls, key)
	g.mu.Unlock()
	close(c.done)
	return c.s, c.err
}
