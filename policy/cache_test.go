package policy

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCachedHits(t *testing.T) {
	t.Parallel()
	c := NewCached(New(Config{}), 100, time.Hour)
	p := on(PropViewACLs, "bob")
	first := c.DecideLive(user("bob", "dev"), p, "alice", View)
	second := c.DecideLive(user("bob", "dev"), p, "alice", View)
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("second DecideLive differs (-first +second):\n%s", diff)
	}
	want := CacheStats{ACLMisses: 1, DecisionMisses: 1, DecisionHits: 1}
	if got := c.Stats(); got != want {
		t.Errorf("Stats() after two equal calls = %+v; want %+v", got, want)
	}
	// Another user on the same app reuses the parsed ACL.
	c.DecideLive(user("eve"), p, "alice", View)
	// Another action is another decision.
	c.DecideLive(user("bob", "dev"), p, "alice", Modify)
	want = CacheStats{ACLMisses: 1, ACLHits: 2, DecisionMisses: 3, DecisionHits: 1}
	if got := c.Stats(); got != want {
		t.Errorf("Stats() = %+v; want %+v", got, want)
	}
}

func TestCachedKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		first   func(c *Cached) Decision
		second  func(c *Cached) Decision
		sameKey bool
	}{
		{
			name:    "unrelated property shares the entry",
			first:   func(c *Cached) Decision { return c.DecideLive(user("bob"), on(), "alice", View) },
			second:  func(c *Cached) Decision { return c.DecideLive(user("bob"), on("spark.app.name", "x"), "alice", View) },
			sameKey: true,
		},
		{
			name:    "group order does not matter",
			first:   func(c *Cached) Decision { return c.DecideLive(user("bob", "b", "a"), on(), "alice", View) },
			second:  func(c *Cached) Decision { return c.DecideLive(user("bob", "a", "b"), on(), "alice", View) },
			sameKey: true,
		},
		{
			name:   "different groups are different entries",
			first:  func(c *Cached) Decision { return c.DecideLive(user("bob", "a"), on(), "alice", View) },
			second: func(c *Cached) Decision { return c.DecideLive(user("bob", "a", "b"), on(), "alice", View) },
		},
		{
			name:   "nil and empty properties differ",
			first:  func(c *Cached) Decision { return c.DecideLive(user("bob"), nil, "alice", View) },
			second: func(c *Cached) Decision { return c.DecideLive(user("bob"), map[string]string{}, "alice", View) },
		},
		{
			name:   "owner is part of the key",
			first:  func(c *Cached) Decision { return c.DecideLive(user("bob"), on(), "alice", View) },
			second: func(c *Cached) Decision { return c.DecideLive(user("bob"), on(), "bob", View) },
		},
		{
			name: "property values cannot run into each other",
			first: func(c *Cached) Decision {
				return c.DecideLive(user("bob"), on(PropAdminACLs, "a", PropViewACLs, "bc"), "o", View)
			},
			second: func(c *Cached) Decision {
				return c.DecideLive(user("bob"), on(PropAdminACLs, "ab", PropViewACLs, "c"), "o", View)
			},
		},
		{
			name: "history rules are part of the key",
			first: func(c *Cached) Decision {
				return c.DecideHistory(user("bob"), HistoryRules{Name: "h"}, props(), "alice", View)
			},
			second: func(c *Cached) Decision {
				return c.DecideHistory(user("bob"), HistoryRules{Name: "h", Enabled: true}, props(), "alice", View)
			},
		},
		{
			name:   "live and history differ",
			first:  func(c *Cached) Decision { return c.DecideLive(user("bob"), props(), "alice", View) },
			second: func(c *Cached) Decision { return c.DecideHistory(user("bob"), HistoryRules{}, props(), "alice", View) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := NewCached(New(Config{}), 100, time.Hour)
			tt.first(c)
			tt.second(c)
			if hit := c.Stats().DecisionHits == 1; hit != tt.sameKey {
				t.Errorf("second call hit the decision cache = %v; want %v (stats %+v)", hit, tt.sameKey, c.Stats())
			}
		})
	}
}

// TestCachedRestartWithNewACLs: an app restarted with new ACL properties
// must be judged by them at once, not after the TTL.
func TestCachedRestartWithNewACLs(t *testing.T) {
	t.Parallel()
	c := NewCached(New(Config{}), 100, time.Hour)
	if d := c.DecideLive(user("eve"), on(PropViewACLs, "bob"), "alice", View); d.Allow {
		t.Fatalf("DecideLive before restart = allow; want deny")
	}
	if d := c.DecideLive(user("eve"), on(PropViewACLs, "bob,eve"), "alice", View); !d.Allow {
		t.Errorf("DecideLive after restart with eve in spark.ui.view.acls = deny (%q); want allow", d.Reasons)
	}
	if d := c.DecideLive(user("bob"), on(PropViewACLs, "eve"), "alice", View); d.Allow {
		t.Errorf("DecideLive for bob after he left spark.ui.view.acls = allow; want deny")
	}
}

func TestCachedTTLExpiry(t *testing.T) {
	t.Parallel()
	c := NewCached(New(Config{}), 100, time.Millisecond)
	s, p := user("bob"), on()
	c.DecideLive(s, p, "alice", View)
	// Poll: expiry is the LRU's business; only a generous bound is assumed.
	deadline := time.Now().Add(10 * time.Second)
	for {
		before := c.Stats().DecisionMisses
		c.DecideLive(s, p, "alice", View)
		if c.Stats().DecisionMisses > before {
			return // the entry expired and was decided again
		}
		if time.Now().After(deadline) {
			t.Fatalf("decision still cached after 10s with a 1ms TTL; stats %+v", c.Stats())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCachedSizeBound(t *testing.T) {
	t.Parallel()
	c := NewCached(New(Config{}), 2, time.Hour)
	p := on()
	for _, u := range []string{"a", "b", "c"} {
		c.DecideLive(user(u), p, "alice", View)
	}
	c.DecideLive(user("a"), p, "alice", View) // evicted by "c"
	if got := c.Stats(); got.DecisionHits != 0 || got.DecisionMisses != 4 {
		t.Errorf("Stats() = %+v; want 0 hits, 4 misses (size 2 evicts the oldest)", got)
	}
}

// TestCachedReasonsNotShared: a caller editing a returned decision must not
// change what the next caller gets.
func TestCachedReasonsNotShared(t *testing.T) {
	t.Parallel()
	c := NewCached(New(Config{}), 10, time.Hour)
	d := c.DecideLive(user("eve"), on(), "alice", View)
	want := append([]string(nil), d.Reasons...)
	d.Reasons[0] = "tampered"
	if got := c.DecideLive(user("eve"), on(), "alice", View); !cmp.Equal(got.Reasons, want) {
		t.Errorf("cached Reasons = %q; want %q", got.Reasons, want)
	}
}

func TestCachedConcurrent(t *testing.T) {
	t.Parallel()
	c := NewCached(New(Config{}), 16, time.Hour)
	p := on(PropViewACLsGroups, "dev")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				u := string(rune('a' + (i+j)%20))
				if d := c.DecideLive(user(u, "dev"), p, "alice", View); !d.Allow {
					t.Errorf("DecideLive(%q in dev) = deny; want allow", u)
					return
				}
			}
		})
	}
	wg.Wait()
}
