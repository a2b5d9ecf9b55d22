package auth

import (
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// maxRevocations bounds the sign-outs remembered at once (about 64 bytes
// each). Past it the oldest are forgotten first, and a copy of such a
// session's cookie works again until it expires.
const maxRevocations = 1 << 16

// revocations remembers the IDs of sessions signed out of, for as long as
// any cookie value of theirs can be valid: every value expires at most one
// session TTL after it was issued, and a revoked session is never renewed.
// The list is this process's own; replicas of the gateway do not share it.
type revocations struct {
	ids *expirable.LRU[string, struct{}]
}

func newRevocations(ttl time.Duration) *revocations {
	return &revocations{ids: expirable.NewLRU[string, struct{}](maxRevocations, nil, ttl)}
}

// add revokes id. Sessions from before IDs existed have none and cannot
// be revoked; the empty ID is never recorded.
func (r *revocations) add(id string) {
	if id != "" {
		r.ids.Add(id, struct{}{})
	}
}

func (r *revocations) has(id string) bool {
	return id != "" && r.ids.Contains(id)
}
