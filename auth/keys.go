package auth

import (
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
)

// DeriveKey derives a 32-byte key for purpose (a fixed label, such as "kill
// confirmation csrf") from the first session key, with HKDF-SHA256, so that
// every replica configured with the same session keys, from the file or
// from SPARKGATE_SESSION_KEYS, derives the same key, and the session key
// itself is never used for anything else. It returns nil when c has no
// keys (mode local without keys: the caller picks a random key).
func DeriveKey(c SessionConfig, purpose string) ([]byte, error) {
	if len(c.Keys) == 0 {
		return nil, nil
	}
	k, err := decodeKey(c.Keys[0])
	if err != nil {
		return nil, fmt.Errorf("auth.session.keys[0]: %w", err)
	}
	out, err := hkdf.Key(sha256.New, k, nil, "sparkgate "+purpose, 32)
	if err != nil {
		return nil, fmt.Errorf("deriving the %s key: %w", purpose, err)
	}
	return out, nil
}
