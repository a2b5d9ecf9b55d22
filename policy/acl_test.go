package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSplitList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   ", nil},
		{",", nil},
		{"a", []string{"a"}},
		{" a , b ,c", []string{"a", "b", "c"}},
		{"a,,b,", []string{"a", "b"}},
		{"a,a, a", []string{"a"}},
		{"\ta\r\n,\x00b\x1f", []string{"a", "b"}},
		{"\u00a0a", []string{"\u00a0a"}}, // Java's trim keeps U+00A0
		{"A,a", []string{"A", "a"}},
		{"*", []string{"*"}},
		{"a b", []string{"a b"}},
	}
	for _, tt := range tests {
		if got := splitList(tt.in); !cmp.Equal(got, tt.want, cmpopts.EquateEmpty()) {
			t.Errorf("splitList(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseSparkBool(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		v, ok bool
	}{
		{"true", true, true},
		{" TRUE\n", true, true},
		{"True", true, true},
		{"false", false, true},
		{"FaLsE", false, true},
		{"", false, false},
		{"1", false, false},
		{"yes", false, false},
		{"t", false, false},
	}
	for _, tt := range tests {
		if v, ok := ParseSparkBool(tt.in); v != tt.v || ok != tt.ok {
			t.Errorf("ParseSparkBool(%q) = %v, %v; want %v, %v", tt.in, v, ok, tt.v, tt.ok)
		}
	}
}

func TestFromSparkProperties(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		props map[string]string
		want  ACL
	}{
		{
			name:  "defaults",
			props: map[string]string{},
			want:  ACL{Owner: "alice", Source: SourceDriver},
		},
		{
			name: "every list",
			props: map[string]string{
				PropACLsEnable: "true", PropAdminACLs: "adm", PropAdminACLsGroups: "admg",
				PropViewACLs: "v1, v2", PropViewACLsGroups: "vg", PropModifyACLs: "m", PropModifyACLsGroups: "mg",
				"spark.app.name": "ignored",
			},
			want: ACL{
				Enabled: true, Owner: "alice", Source: SourceDriver,
				Admins: []string{"adm"}, AdminGroups: []string{"admg"},
				ViewUsers: []string{"v1", "v2"}, ViewGroups: []string{"vg"},
				ModifyUsers: []string{"m"}, ModifyGroups: []string{"mg"},
			},
		},
		{
			name:  "unparsable enable fails closed with a warning",
			props: map[string]string{PropACLsEnable: "on"},
			want: ACL{Enabled: true, Owner: "alice", Source: SourceDriver,
				Warnings: []string{`spark.acls.enable has the value "on", which Spark refuses to start with; it is treated as true.`}},
		},
		{
			name:  "legacy key warns and stays off",
			props: map[string]string{"spark.ui.acls.enable": "true"},
			want: ACL{Owner: "alice", Source: SourceDriver,
				Warnings: []string{"spark.ui.acls.enable is true, but Spark 3.0 and later ignore it; only spark.acls.enable turns ACLs on."}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := FromSparkProperties(tt.props, "alice")
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("FromSparkProperties(%q) mismatch (-want +got):\n%s", tt.props, diff)
			}
		})
	}
}

func TestFromSparkPropertiesNilFailsClosed(t *testing.T) {
	t.Parallel()
	got := FromSparkProperties(nil, "alice")
	if !got.Enabled || len(got.Warnings) != 1 {
		t.Errorf("FromSparkProperties(nil) = %+v; want ACLs enabled with one warning", got)
	}
}

func TestFromHistory(t *testing.T) {
	t.Parallel()
	rules := HistoryRules{Name: "hs1", Enabled: true, Admins: []string{" hadm", "", "bob"}, AdminGroups: []string{"hops"}}
	props := map[string]string{
		PropACLsEnable: "false", PropAdminACLs: "bob, appadm", PropAdminACLsGroups: "appops",
		PropViewACLs: "viewer", PropViewACLsGroups: "vg", PropModifyACLs: "killer", PropModifyACLsGroups: "kg",
	}
	want := ACL{
		Enabled: true, Owner: "alice", Source: "history:hs1",
		Admins: []string{"hadm", "bob", "appadm"}, AdminGroups: []string{"hops", "appops"},
		ViewUsers: []string{"viewer"}, ViewGroups: []string{"vg"},
	}
	got := FromHistory(rules, props, "alice")
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("FromHistory mismatch (-want +got):\n%s", diff)
	}
	if !got.History() || got.HistoryName() != "hs1" {
		t.Errorf("History(), HistoryName() = %v, %q; want true, %q", got.History(), got.HistoryName(), "hs1")
	}
	if rules.Admins[0] != " hadm" {
		t.Errorf("FromHistory changed rules.Admins to %q", rules.Admins)
	}
}

func TestEffectiveLists(t *testing.T) {
	t.Parallel()
	acl := FromSparkProperties(map[string]string{
		PropAdminACLs: "adm", PropAdminACLsGroups: "admg",
		PropViewACLs: "v, adm", PropViewACLsGroups: "vg", PropModifyACLs: "m", PropModifyACLsGroups: "mg",
	}, "alice")
	tests := []struct {
		a             Action
		users, groups []string
	}{
		{View, []string{"adm", "alice", "v"}, []string{"admg", "vg"}},
		{Modify, []string{"adm", "alice", "m"}, []string{"admg", "mg"}},
		{Admin, []string{"adm"}, []string{"admg"}},
	}
	for _, tt := range tests {
		if got := acl.Users(tt.a); !cmp.Equal(got, tt.users) {
			t.Errorf("Users(%s) = %q; want %q", tt.a, got, tt.users)
		}
		if got := acl.Groups(tt.a); !cmp.Equal(got, tt.groups) {
			t.Errorf("Groups(%s) = %q; want %q", tt.a, got, tt.groups)
		}
	}
	if acl.History() || acl.HistoryName() != "" {
		t.Errorf("driver ACL: History(), HistoryName() = %v, %q; want false, \"\"", acl.History(), acl.HistoryName())
	}
}
