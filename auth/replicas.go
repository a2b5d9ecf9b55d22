package auth

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// lockMargin is added to the provider timeout to make the renewal lock's
// lifetime: long enough for one refresh, short enough that a replica that
// died holding it delays the others only briefly.
const lockMargin = 2 * time.Second

// renewPoll is how often a replica waiting for another's renewal looks for
// its result.
const renewPoll = 25 * time.Millisecond

// errRenewBusy means another replica held a session's renewal lock for its
// whole lifetime without sharing a result.
var errRenewBusy = errors.New("another replica is renewing this session")

// start pings the store once, allowing for the first connection (wait):
// a gateway starts without it (sessions work, checked only against this
// replica's sign-outs) and probes it until it answers.
func (s *shared) start(ctx context.Context, addr string, wait time.Duration) {
	cctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := s.store.ping(cctx); err != nil {
		s.failed(OpPing, err)
		return
	}
	s.logger.Info("session store up", zap.String("addr", addr))
}

// isRevoked reports whether the session id was signed out of: on this
// replica, or (with a shared store) on any. A revocation learnt from the
// store is remembered here too, so it holds through a later outage.
func (a *Authenticator) isRevoked(ctx context.Context, id string) bool {
	if id == "" {
		return false // sessions from before IDs existed cannot be revoked
	}
	if a.revoked.has(id) {
		return true
	}
	if a.shared == nil || !a.shared.revoked(ctx, id) {
		return false
	}
	a.revoked.add(id)
	return true
}

// revoke signs the session id out: here at once, and on every replica
// through the store (queued while the store is down).
func (a *Authenticator) revoke(ctx context.Context, id string) {
	if id == "" {
		return
	}
	a.revoked.add(id)
	if a.shared != nil {
		a.shared.revoke(ctx, id)
	}
}

// refreshShared renews s (read from the cookie value whose hash is key) so
// that, of all replicas, only one spends its refresh token: the one that
// takes the session's lock in the store renews it and shares the renewed
// cookie value, sealed with a key derived from the old value (see
// sealRenewed); the others wait for that value. When the store is down
// each replica renews alone, as without a store.
func (a *Authenticator) refreshShared(ctx context.Context, value string, key [32]byte, s *session) (*session, error) {
	from := hex.EncodeToString(key[:])
	lockName := s.ID
	if lockName == "" {
		lockName = from
	}
	lockTTL := a.cfg.OIDC.Timeout + lockMargin
	deadline := time.Now().Add(lockTTL + lockMargin)
	for {
		if ns := a.sharedRenewed(ctx, value, key, s); ns != nil {
			return ns, nil
		}
		tok, ok, err := a.shared.lock(ctx, lockName, lockTTL)
		if err != nil {
			// The store is down, and with it what the other replicas
			// revoked: a sign-out queued there is kept for one TTL once
			// written, so no value renewed now may outlive the session's
			// own expiry. The identity is renewed, the session's time not.
			return a.refreshAlone(ctx, key, s, true)
		}
		if ok {
			defer a.shared.unlock(ctx, lockName, tok)
			// The holder before us may have finished between our look
			// and our lock.
			if ns := a.sharedRenewed(ctx, value, key, s); ns != nil {
				return ns, nil
			}
			ns, err := a.refreshAlone(ctx, key, s, false)
			if err != nil {
				return nil, err
			}
			if enc, err := a.codec.encode(sessionCookie, ns); err == nil {
				if sealed, err := sealRenewed(value, enc); err == nil {
					a.shared.putRenewed(ctx, from, sealed)
				}
			}
			return ns, nil
		}
		if time.Now().After(deadline) {
			return nil, errRenewBusy
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(renewPoll):
		}
	}
}

// refreshAlone renews s with the provider and remembers the result here;
// with keepExpiry the renewed session ends when s does.
func (a *Authenticator) refreshAlone(ctx context.Context, key [32]byte, s *session, keepExpiry bool) (*session, error) {
	ns, err := a.refreshSession(ctx, s)
	if err == nil {
		if keepExpiry && ns.Expiry.After(s.Expiry) {
			ns.Expiry = s.Expiry
		}
		a.refreshed.Add(key, ns)
	}
	return ns, err
}

// sharedRenewed returns the session another replica renewed the cookie
// value (hash key) to, if it is the same sign-in as s and still fresh.
func (a *Authenticator) sharedRenewed(ctx context.Context, value string, key [32]byte, s *session) *session {
	sealed, ok := a.shared.getRenewed(ctx, hex.EncodeToString(key[:]))
	if !ok {
		return nil
	}
	enc, err := openRenewed(value, sealed)
	if err != nil {
		return nil
	}
	ns := new(session)
	if err := a.codec.decode(sessionCookie, enc, ns); err != nil || ns.ID != s.ID || !a.fresh(ns) {
		return nil
	}
	a.refreshed.Add(key, ns)
	return ns
}

// sealRenewed encrypts the renewed cookie value enc with AES-GCM under a
// key derived from the cookie value it renews (from). The store names it
// by the hash of from, so whoever can read the store, but holds no cookie
// of that sign-in, gets nothing usable from it; and whoever can write the
// store cannot hand one sign-in's renewal to another's cookie.
func sealRenewed(from, enc string) (string, error) {
	aead, err := renewedAEAD(from)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("sealing renewed session: %w", err)
	}
	return string(aead.Seal(nonce, nonce, []byte(enc), nil)), nil
}

func openRenewed(from, sealed string) (string, error) {
	aead, err := renewedAEAD(from)
	if err != nil {
		return "", err
	}
	if len(sealed) < aead.NonceSize() {
		return "", errors.New("sealed renewed session too short")
	}
	b, err := aead.Open(nil, []byte(sealed[:aead.NonceSize()]), []byte(sealed[aead.NonceSize():]), nil)
	if err != nil {
		return "", fmt.Errorf("opening renewed session: %w", err)
	}
	return string(b), nil
}

func renewedAEAD(from string) (cipher.AEAD, error) {
	k, err := hkdf.Key(sha256.New, []byte(from), nil, "sparkgate renewed session", 32)
	if err != nil {
		return nil, fmt.Errorf("deriving renewed-session key: %w", err)
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, fmt.Errorf("renewed-session cipher: %w", err)
	}
	return cipher.NewGCM(block)
}

// fresh reports whether s needs no renewal now.
func (a *Authenticator) fresh(s *session) bool {
	now := a.now()
	return now.Before(s.Expiry) && (s.RefreshAt.IsZero() || now.Before(s.RefreshAt))
}

// StoreStats returns the shared session store's health; ok is false when
// no shared store is configured.
func (a *Authenticator) StoreStats() (st StoreStats, ok bool) {
	if a.shared == nil {
		return StoreStats{}, false
	}
	return a.shared.stats(), true
}

// ClaimOnce records key (a one-time token's nonce) for ttl in the store
// replicas share, and reports whether no replica had recorded it before.
// Without a store, or while it is down, it reports true: the caller's own
// memory of used tokens is then all there is (fail open, as for sessions).
// ttl is rounded up to a millisecond.
func (a *Authenticator) ClaimOnce(ctx context.Context, key string, ttl time.Duration) bool {
	if a.shared == nil {
		return true
	}
	first, err := a.shared.claim(ctx, key, max(ttl, time.Millisecond))
	return first || err != nil
}

// Close stops the shared store's prober and closes its connections.
func (a *Authenticator) Close() error {
	if a.shared == nil {
		return nil
	}
	return a.shared.close()
}
