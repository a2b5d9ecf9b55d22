package discovery

import (
	"bufio"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		line string
		want Event
		ok   bool
	}{
		// Lines copied from real Spark 3.5.9 / 4.0.5 drivers (testdata) and
		// from the messages in Spark's source for older versions.
		{"3.5 port line", "26/11/29 13:57:10 INFO Utils: Successfully started service 'SparkUI' on port 36551.",
			Event{Kind: EventUIPort, Scheme: "http", Port: 36551}, true},
		{"https port line", "24/05/01 12:34:56 INFO Utils: Successfully started service 'SparkUI (HTTPS)' on port 4440.",
			Event{Kind: EventUIPort, Scheme: "https", Port: 4440}, true},
		{"sparkDriver ignored", "24/05/01 12:34:56 INFO Utils: Successfully started service 'sparkDriver' on port 41235.", Event{}, false},
		{"block transfer ignored", "24/05/01 12:34:56 INFO Utils: Successfully started service 'org.apache.spark.network.netty.NettyBlockTransferService' on port 40777.", Event{}, false},
		{"history ui ignored", "24/05/01 12:34:56 INFO Utils: Successfully started service 'HistoryServerUI' on port 18080.", Event{}, false},
		{"master ui ignored", "24/05/01 12:34:56 INFO Utils: Successfully started service 'MasterUI' on port 8080.", Event{}, false},
		{"port out of range", "INFO Utils: Successfully started service 'SparkUI' on port 70000.", Event{}, false},
		{"port zero", "INFO Utils: Successfully started service 'SparkUI' on port 0.", Event{}, false},
		{"bound 2.x", "17/01/01 00:00:00 INFO SparkUI: Bound SparkUI to 0.0.0.0, and started at http://10.1.2.3:4040",
			Event{Kind: EventUIURL, URL: "http://10.1.2.3:4040"}, true},
		{"started 1.x", "16/01/01 00:00:00 INFO SparkUI: Started SparkUI at http://drv.example.com:4041",
			Event{Kind: EventUIURL, URL: "http://drv.example.com:4041"}, true},
		{"shell", "Spark context Web UI available at http://192.0.2.2:4040",
			Event{Kind: EventUIURL, URL: "http://192.0.2.2:4040"}, true},
		{"shell proxy form", "Spark context Web UI available at http://master:8080/proxy/app-20240501123456-0000",
			Event{Kind: EventUIURL, URL: "http://master:8080/proxy/app-20240501123456-0000"}, true},
		{"stopped", "26/11/29 13:57:14 INFO SparkUI: Stopped Spark web UI at http://192.0.2.2:36551",
			Event{Kind: EventUIStopped, URL: "http://192.0.2.2:36551"}, true},
		{"pre-bind is not the port", "26/11/29 13:57:10 INFO JettyUtils: Start Jetty 0.0.0.0:0 for SparkUI",
			Event{Kind: EventPreBind, Host: "0.0.0.0"}, true},
		{"pre-bind ipv6", "INFO JettyUtils: Start Jetty [::]:4040 for SparkUI",
			Event{Kind: EventPreBind, Host: "::", Port: 4040}, true},
		{"retry", "24/05/01 12:34:56 WARN Utils: Service 'SparkUI' could not bind on port 4040. Attempting port 4041.",
			Event{Kind: EventUIRetry, Port: 4040}, true},
		{"retry random", "WARN Utils: Service 'SparkUI' could not bind on a random free port. You may check whether configuring an appropriate binding address.",
			Event{Kind: EventUIRetry}, true},
		{"standalone id", "24/05/01 12:34:56 INFO StandaloneSchedulerBackend: Connected to Spark cluster with app ID app-20240501123456-0003",
			Event{Kind: EventAppID, AppID: "app-20240501123456-0003"}, true},
		{"yarn id", "24/05/01 12:34:56 INFO Client: Submitting application application_1714550000000_0042 to ResourceManager",
			Event{Kind: EventAppID, AppID: "application_1714550000000_0042"}, true},
		{"event log", "26/11/29 13:57:11 INFO SingleEventLogFileWriter: Logging events to file:/tmp/spark-events/local-1795960630888.inprogress",
			Event{Kind: EventAppID, AppID: "local-1795960630888"}, true},
		{"event log rolling file", "26/12/01 10:48:06 INFO RollingEventLogFilesWriter: Logging events to file:/w/events/eventlog_v2_local-1796122081539/events_1_local-1796122081539.zstd",
			Event{Kind: EventAppID, AppID: "local-1796122081539"}, true},
		{"event log rolling", "INFO RollingEventLogFilesWriter: Logging events to file:/tmp/spark-events/eventlog_v2_local-1700000000000",
			Event{Kind: EventAppID, AppID: "local-1700000000000"}, true},
		{"shell sc", "Spark context available as 'sc' (master = local[*], app id = local-1700000000000).",
			Event{Kind: EventAppID, AppID: "local-1700000000000"}, true},
		{"block manager host", "26/11/29 13:57:10 INFO BlockManagerMaster: Registering BlockManager BlockManagerId(driver, 192.0.2.2, 40777, None)",
			Event{Kind: EventHost, Host: "192.0.2.2"}, true},
		{"executor host", "26/11/29 13:57:10 INFO Executor: Starting executor ID driver on host 192.0.2.2",
			Event{Kind: EventHost, Host: "192.0.2.2"}, true},
		{"json port", `{"ts":"2026-11-29T13:57:16.953Z","level":"INFO","msg":"Successfully started service 'SparkUI' on port 34809.","logger":"Utils"}`,
			Event{Kind: EventUIPort, Scheme: "http", Port: 34809}, true},
		{"json port with context", `{"ts":"2026-11-29T13:57:16.953Z","level":"INFO","msg":"Successfully started service 'SparkUI' on port 34809.","context":{"port":"34809","service_name":" 'SparkUI'"},"logger":"Utils"}`,
			Event{Kind: EventUIPort, Scheme: "http", Port: 34809}, true},
		{"json context disagrees", `{"msg":"Successfully started service 'SparkUI' on port 34809.","context":{"port":"1","service_name":" 'SparkUI'"}}`, Event{}, false},
		{"json other service", `{"msg":"Successfully started service 'sparkDriver' on port 34809.","context":{"port":"34809","service_name":" 'sparkDriver'"}}`, Event{}, false},
		{"json stopped", `{"ts":"2026-11-29T13:57:21.514Z","level":"INFO","msg":"Stopped Spark web UI at http://192.0.2.2:34809","logger":"SparkUI"}`,
			Event{Kind: EventUIStopped, URL: "http://192.0.2.2:34809"}, true},
		{"json broken", `{"msg":"Successfully started service 'SparkUI' on port 34809.`, Event{}, false},
		{"url with credentials", "Spark context Web UI available at http://u:p@evil:4040", Event{}, false},
		{"url not http", "Spark context Web UI available at file:///etc/passwd", Event{}, false},
		{"unrelated", "26/11/29 13:57:10 INFO SparkEnv: Registering MapOutputTracker", Event{}, false},
		{"empty", "", Event{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseLine(tt.line)
			if ok != tt.ok || got != tt.want {
				t.Errorf("ParseLine(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestParseLineRealLogs runs whole driver logs captured from Spark 3.5.9 and
// 4.0.5 (structured JSON) and checks the events found, in order.
func TestParseLineRealLogs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		file string
		want []Event
	}{
		{"testdata/spark-3.5.9-local.log", []Event{
			{Kind: EventPreBind, Host: "0.0.0.0"},
			{Kind: EventUIPort, Scheme: "http", Port: 36551},
			{Kind: EventHost, Host: "192.0.2.2"},
			{Kind: EventHost, Host: "192.0.2.2"},
			{Kind: EventHost, Host: "192.0.2.2"},
			{Kind: EventHost, Host: "192.0.2.2"},
			{Kind: EventHost, Host: "192.0.2.2"},
			{Kind: EventAppID, AppID: "local-1795960630888"},
			{Kind: EventUIStopped, URL: "http://192.0.2.2:36551"},
		}},
		{"testdata/spark-4.0.5-structured.log", []Event{
			{Kind: EventPreBind, Host: "0.0.0.0"},
			{Kind: EventUIPort, Scheme: "http", Port: 34809},
			{Kind: EventHost, Host: "192.0.2.2"},
			{Kind: EventHost, Host: "192.0.2.2"},
			{Kind: EventHost, Host: "192.0.2.2"},
			{Kind: EventHost, Host: "192.0.2.2"},
			{Kind: EventHost, Host: "192.0.2.2"},
			{Kind: EventUIStopped, URL: "http://192.0.2.2:34809"},
		}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var got []Event
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if ev, ok := ParseLine(sc.Text()); ok {
					got = append(got, ev)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events in %s (-want +got):\n%s", tt.file, diff)
			}
		})
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		"INFO Utils: Successfully started service 'SparkUI' on port 4040.",
		"Spark context Web UI available at http://h:4040",
		"Stopped Spark web UI at http://10.0.0.1:4040",
		`{"msg":"Successfully started service 'SparkUI' on port 1.","context":{"port":1}}`,
		"Start Jetty [::]:0 for SparkUI",
		"Logging events to file:/x/eventlog_v2_app-1.zstd.inprogress",
		"Spark context available as 'sc' (master = yarn, app id = application_1_2).",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		ev, ok := ParseLine(line)
		if !ok {
			if ev != (Event{}) {
				t.Fatalf("ParseLine(%q) = %+v, false; want zero event", line, ev)
			}
			return
		}
		switch ev.Kind {
		case EventUIPort:
			if ev.Port < 1 || ev.Port > 65535 || (ev.Scheme != "http" && ev.Scheme != "https") {
				t.Fatalf("ParseLine(%q) = %+v: bad port event", line, ev)
			}
		case EventUIURL, EventUIStopped:
			if _, err := parseRootURL(ev.URL); err != nil {
				t.Fatalf("ParseLine(%q) URL %q does not parse as a UI URL: %v", line, ev.URL, err)
			}
		case EventAppID:
			if !validAppIDHint(ev.AppID) {
				t.Fatalf("ParseLine(%q) app id %q has bad characters", line, ev.AppID)
			}
		case EventHost:
			if !validHost(ev.Host) {
				t.Fatalf("ParseLine(%q) host %q invalid", line, ev.Host)
			}
		}
	})
}
