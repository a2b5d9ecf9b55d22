package policy

import (
	"testing"
	"time"
)

var benchProps = map[string]string{
	PropACLsEnable:      "true",
	PropAdminACLs:       "adm1,adm2",
	PropAdminACLsGroups: "platform",
	PropViewACLs:        "u1, u2, u3, u4",
	PropViewACLsGroups:  "analysts,engineers",
	PropModifyACLs:      "u1",
	"spark.app.name":    "etl",
}

var sink Decision

func BenchmarkDecide(b *testing.B) {
	p := New(Config{Admins: []string{"root"}})
	acl := FromSparkProperties(benchProps, "alice")
	s := Subject{User: "bob", Groups: []string{"staff", "engineers"}}
	b.ReportAllocs()
	for b.Loop() {
		sink = p.Decide(s, acl, View)
	}
}

func BenchmarkDecideDenied(b *testing.B) {
	p := New(Config{})
	acl := FromSparkProperties(benchProps, "alice")
	s := Subject{User: "eve", Groups: []string{"staff"}}
	b.ReportAllocs()
	for b.Loop() {
		sink = p.Decide(s, acl, Modify)
	}
}

func BenchmarkFromSparkProperties(b *testing.B) {
	b.ReportAllocs()
	var acl ACL
	for b.Loop() {
		acl = FromSparkProperties(benchProps, "alice")
	}
	_ = acl
}

// BenchmarkCachedDecideLive is the per-request path: a decision cache hit.
func BenchmarkCachedDecideLive(b *testing.B) {
	c := NewCached(New(Config{}), DefaultCacheSize, time.Hour)
	s := Subject{User: "bob", Groups: []string{"engineers", "staff"}}
	c.DecideLive(s, benchProps, "alice", View)
	b.ReportAllocs()
	for b.Loop() {
		sink = c.DecideLive(s, benchProps, "alice", View)
	}
}
