package policy

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// Cached puts two bounded, expiring LRU caches in front of a Policy: parsed
// ACLs, keyed by a hash of where the ACL comes from, the owner and the
// app's ACL properties; and decisions, keyed by that ACL key, the user, the
// sorted groups and the action. Because the properties are part of the key,
// an app restarted with new ACLs gets new entries at once; the TTL only
// bounds how long an entry is reused. Safe for concurrent use.
type Cached struct {
	policy    *Policy
	acls      *expirable.LRU[cacheKey, ACL]
	decisions *expirable.LRU[cacheKey, Decision]

	aclHits, aclMisses, decisionHits, decisionMisses atomic.Uint64
}

// cacheKey is a SHA-256 digest: fixed size, and no collisions to fear
// between inputs an app owner controls.
type cacheKey [sha256.Size]byte

// CacheStats counts cache lookups since the Cached was made.
type CacheStats struct {
	ACLHits, ACLMisses           uint64
	DecisionHits, DecisionMisses uint64
}

// NewCached wraps p. size bounds each cache in entries (DefaultCacheSize if
// not positive); ttl is how long an entry is reused (DefaultCacheTTL if not
// positive). Each cache runs one goroutine that purges expired entries for
// the life of the process, so make one Cached per Policy, not per request.
func NewCached(p *Policy, size int, ttl time.Duration) *Cached {
	if size <= 0 {
		size = DefaultCacheSize
	}
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	return &Cached{
		policy:    p,
		acls:      expirable.NewLRU[cacheKey, ACL](size, nil, ttl),
		decisions: expirable.NewLRU[cacheKey, Decision](size, nil, ttl),
	}
}

// DecideLive decides for a live driver with the given Spark properties and
// owner, as Policy.Decide(s, FromSparkProperties(props, owner), a) would.
func (c *Cached) DecideLive(s Subject, props map[string]string, owner string, a Action) Decision {
	k := liveKey(props, owner)
	return c.decide(k, s, a, func() ACL { return FromSparkProperties(props, owner) })
}

// DecideHistory decides for an app served by a History Server, as
// Policy.Decide(s, FromHistory(rules, props, owner), a) would.
func (c *Cached) DecideHistory(s Subject, rules HistoryRules, props map[string]string, owner string, a Action) Decision {
	k := historyKey(rules, props, owner)
	return c.decide(k, s, a, func() ACL { return FromHistory(rules, props, owner) })
}

// Stats returns the hit and miss counts so far.
func (c *Cached) Stats() CacheStats {
	return CacheStats{
		ACLHits: c.aclHits.Load(), ACLMisses: c.aclMisses.Load(),
		DecisionHits: c.decisionHits.Load(), DecisionMisses: c.decisionMisses.Load(),
	}
}

func (c *Cached) decide(aclKey cacheKey, s Subject, a Action, build func() ACL) Decision {
	dk := decisionKey(aclKey, s, a)
	if d, ok := c.decisions.Get(dk); ok {
		c.decisionHits.Add(1)
		return cloneDecision(d)
	}
	c.decisionMisses.Add(1)
	acl, ok := c.acls.Get(aclKey)
	if ok {
		c.aclHits.Add(1)
	} else {
		c.aclMisses.Add(1)
		acl = build()
		c.acls.Add(aclKey, acl)
	}
	d := c.policy.Decide(s, acl, a)
	c.decisions.Add(dk, d)
	return cloneDecision(d)
}

// cloneDecision copies Reasons and Ask so a caller cannot change a cached
// entry.
func cloneDecision(d Decision) Decision {
	d.Reasons = slices.Clone(d.Reasons)
	d.Ask = slices.Clone(d.Ask)
	return d
}

// keyBuf builds the input of a cache key: every field is length-prefixed,
// so no two different inputs share an encoding.
type keyBuf []byte

func (b keyBuf) str(s string) keyBuf {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func (b keyBuf) list(l []string) keyBuf {
	b = binary.AppendUvarint(b, uint64(len(l)))
	for _, s := range l {
		b = b.str(s)
	}
	return b
}

// props encodes only the properties that take part in a decision, so
// unrelated ones do not split the cache, and marks a nil map, which
// FromSparkProperties treats differently from an empty one.
func (b keyBuf) props(props map[string]string) keyBuf {
	if props == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	for _, k := range aclProps {
		v, ok := props[k]
		if !ok {
			b = append(b, 0)
			continue
		}
		b = append(b, 1).str(v)
	}
	return b
}

func liveKey(props map[string]string, owner string) cacheKey {
	var arr [512]byte
	b := append(keyBuf(arr[:0]), 'D').str(owner).props(props)
	return sha256.Sum256(b)
}

func historyKey(rules HistoryRules, props map[string]string, owner string) cacheKey {
	var arr [512]byte
	b := append(keyBuf(arr[:0]), 'H').str(rules.Name)
	if rules.Enabled {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = b.list(rules.Admins).list(rules.AdminGroups).str(owner).props(props)
	return sha256.Sum256(b)
}

func decisionKey(acl cacheKey, s Subject, a Action) cacheKey {
	var arr [512]byte
	groups := s.Groups
	if !slices.IsSorted(groups) {
		groups = slices.Sorted(slices.Values(groups))
	}
	b := append(keyBuf(arr[:0]), acl[:]...)
	b = binary.AppendVarint(b, int64(a))
	b = b.str(s.User).list(groups)
	return sha256.Sum256(b)
}
