package auth

import (
	"strings"
	"testing"
)

// TestOIDCSettingsWithoutModeOIDC: an auth.oidc section (issuer, client
// id) without auth.mode: oidc ran the gateway in local mode, signing in
// whoever opened the printed URL as the service's OS user, with no error
// naming the forgotten key.
func TestOIDCSettingsWithoutModeOIDC(t *testing.T) {
	t.Setenv(EnvClientSecret, "")
	t.Setenv(EnvSessionKeys, "")
	c := Config{OIDC: OIDCConfig{Issuer: "https://idp.example.com", ClientID: "sparkgate"}}
	c.SetDefaults()
	for _, err := range c.Validate() {
		if strings.HasPrefix(err.Error(), "auth.mode:") || strings.HasPrefix(err.Error(), "auth.oidc") {
			return
		}
	}
	t.Errorf("auth.oidc.issuer and client_id set, auth.mode unset: Validate() = %v; want an error naming auth.mode", c.Validate())
}
