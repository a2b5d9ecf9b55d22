package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// benchEnvironment is a driver's /environment answer shaped and sized like
// a real Spark 3.5.9 driver's (about 100 KB: 964 Hadoop properties, 253
// classpath entries, Jackson's pretty printer), with the ACL properties.
func benchEnvironment(id string) []byte {
	var b bytes.Buffer
	pairs := func(name string, n int, kv func(i int) (string, string)) {
		fmt.Fprintf(&b, ",\n  %q : [ ", name)
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			k, v := kv(i)
			fmt.Fprintf(&b, "[ %q, %q ]", k, v)
		}
		b.WriteString(" ]")
	}
	b.WriteString("{\n  \"runtime\" : {\n    \"javaVersion\" : \"17.0.15 (Debian)\",\n    \"javaHome\" : \"/usr/lib/jvm/java-17-openjdk-amd64\",\n    \"scalaVersion\" : \"version 2.12.18\"\n  }")
	spark := [][2]string{
		{"spark.acls.enable", "true"}, {"spark.app.id", id}, {"spark.app.name", "etl"},
		{"spark.driver.extraJavaOptions", "-Djava.net.preferIPv6Addresses=false -XX:+IgnoreUnrecognizedVMOptions --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.lang.invoke=ALL-UNNAMED --add-opens=java.base/java.io=ALL-UNNAMED"},
		{"spark.driver.host", "10.0.0.7"}, {"spark.driver.port", "37965"}, {"spark.master", "yarn"},
		{"spark.modify.acls", "alice"}, {"spark.ui.view.acls", "alice,bob"}, {"spark.ui.view.acls.groups", "analysts"},
	}
	for i := len(spark); i < 18; i++ {
		spark = append(spark, [2]string{fmt.Sprintf("spark.sql.conf.%d", i), "some-value"})
	}
	pairs("sparkProperties", len(spark), func(i int) (string, string) { return spark[i][0], spark[i][1] })
	pairs("hadoopProperties", 964, func(i int) (string, string) {
		return fmt.Sprintf("fs.s3a.bucket.property.number.%04d", i), fmt.Sprintf("value-%d-of-a-hadoop-setting", i)
	})
	pairs("systemProperties", 48, func(i int) (string, string) {
		if i == 0 {
			return "user.name", "alice"
		}
		return fmt.Sprintf("java.vm.property.%02d", i), "/usr/lib/jvm/java-17-openjdk-amd64/lib"
	})
	pairs("metricsProperties", 4, func(i int) (string, string) {
		return fmt.Sprintf("*.sink.servlet.%d", i), "org.apache.spark.metrics.sink.MetricsServlet"
	})
	pairs("classpathEntries", 253, func(i int) (string, string) {
		return fmt.Sprintf("/opt/spark-3.5.9/venv/lib/python3.11/site-packages/pyspark/jars/library-number-%03d-2.12-3.5.9.jar", i), "System Classpath"
	})
	b.WriteString(",\n  \"resourceProfiles\" : [ {\n    \"id\" : 0,\n    \"executorResources\" : {\n      \"cores\" : {\n        \"resourceName\" : \"cores\",\n        \"amount\" : 1,\n        \"discoveryScript\" : \"\",\n        \"vendor\" : \"\"\n      }\n    },\n    \"taskResources\" : {\n      \"cpus\" : {\n        \"resourceName\" : \"cpus\",\n        \"amount\" : 1.0\n      }\n    }\n  } ]\n}")
	return b.Bytes()
}

// decodeEnvironmentReference is what decodeEnvironment does, by decoding
// the whole document with encoding/json: the oracle of FuzzDecodeEnvironment.
func decodeEnvironmentReference(body []byte) (map[string]string, string, error) {
	var env struct {
		SparkProperties  [][]string `json:"sparkProperties"`
		SystemProperties [][]string `json:"systemProperties"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, "", err
	}
	acl := map[string]string{}
	proxyBase := ""
	scan := func(pairs [][]string, sys bool) {
		for _, kv := range pairs {
			if len(kv) != 2 {
				continue
			}
			if kv[0] == "spark.ui.proxyBase" && (proxyBase == "" || !sys) {
				proxyBase = kv[1]
			}
			if !sys && slices.Contains(aclKeys, kv[0]) {
				acl[kv[0]] = kv[1]
			}
		}
	}
	scan(env.SystemProperties, true)
	scan(env.SparkProperties, false)
	return acl, strings.TrimRight(proxyBase, "/"), nil
}

// FuzzDecodeEnvironment: on every JSON object that is valid JSON,
// decodeEnvironment agrees with decoding the whole document with
// encoding/json (decodeEnvironmentReference): both fail, or both read the
// same properties and proxy base.
func FuzzDecodeEnvironment(f *testing.F) {
	for _, s := range []string{
		string(benchEnvironment("app-1")),
		`{}`, ` { } `, `{"sparkProperties":null}`, `{"sparkProperties":"x"}`, `{"sparkProperties":[["spark.acls.enable"]]}`,
		`{"SPARKPROPERTIES":[["spark.acls.enable","true"]]}`, `{"spar\u006bProperties":[["spark.ui.proxyBase","/p/"]]}`,
		`{"sparkProperties":[["spark.admin.acls","a"]],"sparkProperties":[["spark.admin.acls","b"]]}`,
		`{"sparkProperties":[["spark.admin.acls","a"]],"sparkproperties":null}`,
		`{"systemProperties":[["spark.ui.proxyBase","/sys"],["spark.acls.enable","false"]],"sparkProperties":[["spark.acls.enable","true"]]}`,
		`{"systemProperties":[["spark.ui.view.acls","*"]],"sparkProperties":[["spark.acls.enable","true"]]}`,
		`{"a":{"b":[1,2,{"c":"]}\"["}]},"sparkProperties":[["spark.ui.view.acls","x\"y"]],"z":-1.5e3,"t":true}`,
		`{"sparkProperties":[null,[],["spark.acls.enable"],["spark.acls.enable","true","x"],["spark.admin.acls",null],[null,"v"]]}`,
		`{"sparkProperties":[["spark.admin.acls","a\u0062\n"],["spark.ui.view.acls","\ud800"],["spark.modify.acls","caf\u00e9"]]}`,
		"{\"sparkProperties\":[[\"spark.admin.acls\",\"\xff\xfe\"],[\"spark.ui.proxyBase\",\"/a//\"]]}",
		`{"sparkProperties":[["x",1]]}`, `{"sparkProperties":[["x","y",[]]]}`, `{"sparkProperties":[{"a":"b"}]}`, `{"sparkProperties":{}}`,
		`{"sparkProperties":[["x","y"]],"systemProperties":[["spark.admin.acls",true]]}`, `{"systemProperties":[[ "spark.ui.proxyBase" , "/s" ] , null ]}`,
		`{"a":[}`, `{"a":1,}`, `{"a" 1}`, `{"a":"\\"}`, `{"\\":1}`, `{"k":"ſparkProperties"}`, `{"ſparkProperties":[["spark.acls.enable","true"]]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' || !json.Valid(b) {
			// getBody passes on objects only; where the JSON is not
			// valid the two may differ (see envdecode.go), but the scan
			// must not panic.
			_, _, _ = decodeEnvironment(b)
			return
		}
		acl, pb, err := decodeEnvironment(b)
		wantACL, wantPB, wantErr := decodeEnvironmentReference(b)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("decodeEnvironment(%q) error %v; encoding/json: %v", b, err, wantErr)
		}
		if err == nil && (!maps.Equal(acl, wantACL) || pb != wantPB) {
			t.Fatalf("decodeEnvironment(%q) = %v, %q; encoding/json: %v, %q", b, acl, pb, wantACL, wantPB)
		}
	})
}

func TestDecodeEnvironment(t *testing.T) {
	t.Parallel()
	acl, pb, err := decodeEnvironment(benchEnvironment("app-1"))
	want := map[string]string{"spark.acls.enable": "true", "spark.modify.acls": "alice", "spark.ui.view.acls": "alice,bob", "spark.ui.view.acls.groups": "analysts"}
	if err != nil || !maps.Equal(acl, want) || pb != "" {
		t.Errorf("decodeEnvironment(real-sized) = %v, %q, %v; want %v, \"\", nil", acl, pb, err, want)
	}
	// A system property grants nothing: Spark's SecurityManager reads SparkConf.
	acl, pb, err = decodeEnvironment([]byte(`{"systemProperties":[["spark.ui.view.acls","*"],["spark.ui.proxyBase","/sys/"]],"sparkProperties":[["spark.acls.enable","true"]]}`))
	if want := map[string]string{"spark.acls.enable": "true"}; err != nil || !maps.Equal(acl, want) || pb != "/sys" {
		t.Errorf("decodeEnvironment(view ACLs as a system property) = %v, %q, %v; want %v, \"/sys\", nil", acl, pb, err, want)
	}
	for _, bad := range []string{`[]`, `{`, `{"a":[}`, `{"a":1,}`, `{"a":1} x`, `{"sparkProperties":[["a",1]]}`, `{"a":"x`, `{"a":` + strings.Repeat("[", envNestMax+1)} {
		if _, _, err := decodeEnvironment([]byte(bad)); err == nil {
			t.Errorf("decodeEnvironment(%.40q) = nil error; want one", bad)
		}
	}
}
