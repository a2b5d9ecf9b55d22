package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

// serveAPIApp serves /api/v1/applications/<id>/...: the live driver's REST,
// or the History Server's once the driver has gone.
func (s *Server) serveAPIApp(w http.ResponseWriter, r *http.Request, st *reqState) error {
	if isDiagnosisAPI(st.route) {
		return s.serveDiagnosis(w, r, st, true)
	}
	if done, err := s.guardRequest(w, r, st); done {
		return err
	}
	to, err := s.resolveApp(st, resolveOpts{attempt: st.route.Attempt, everyAttempt: allEventLogs(st.route)})
	if err != nil {
		return err
	}
	if ref := to.hist; ref != nil {
		st.prefix = "/hs/" + ref.Server
		s.proxy(w, r, st, s.hs[ref.Server], "History Server "+ref.Server)
		return nil
	}
	// A Location from the driver's REST resolves under /app/<id>.
	st.prefix = "/app/" + to.app.ID
	st.suspectID = to.app.ID
	s.proxyDriver(w, r, st, to.app.UIURL)
	return nil
}

// allEventLogs reports whether a REST route downloads the event logs of
// every attempt of an app: /api/v1/applications/<id>/logs names no attempt.
// The History Server checks one attempt's ACLs for it (the one without an
// id, else "1") and zips them all; the gateway asks for every attempt's.
func allEventLogs(rt Route) bool {
	if rt.Attempt != "" || rt.AppID == "" {
		return false
	}
	rest, ok := appAPIRest(rt)
	return ok && strings.TrimSuffix(rest, "/") == "/logs"
}

// appAPIRest is what follows /api/v1/applications/<id> in the route's
// path, without building that prefix on every request.
func appAPIRest(rt Route) (string, bool) {
	rest, ok := strings.CutPrefix(rt.Path, "/api/v1/applications/")
	if !ok {
		return "", false
	}
	return strings.CutPrefix(rest, rt.AppID)
}

// sparkDate is the date layout of Spark's REST API.
const sparkDate = "2006-01-02T15:04:05.000GMT"

// apiApp and apiAttempt have the shape of Spark's ApplicationInfo and
// ApplicationAttemptInfo (status/api/v1/api.scala), field order included.
type apiApp struct {
	ID       string       `json:"id"`
	Name     string       `json:"name"`
	Attempts []apiAttempt `json:"attempts"`
}

type apiAttempt struct {
	AttemptID        string `json:"attemptId,omitempty"`
	StartTime        string `json:"startTime"`
	EndTime          string `json:"endTime"`
	LastUpdated      string `json:"lastUpdated"`
	Duration         int64  `json:"duration"`
	SparkUser        string `json:"sparkUser"`
	Completed        bool   `json:"completed"`
	AppSparkVersion  string `json:"appSparkVersion"`
	StartTimeEpoch   int64  `json:"startTimeEpoch"`
	EndTimeEpoch     int64  `json:"endTimeEpoch"`
	LastUpdatedEpoch int64  `json:"lastUpdatedEpoch"`
}

// serveAPIList serves /api/v1/applications: every app the user may view,
// live and finished, in Spark's JSON shape, so that Spark's own history
// page script and REST clients read it unchanged. Query: status
// (running|completed, repeatable) and limit, as Spark's.
func (s *Server) serveAPIList(w http.ResponseWriter, r *http.Request, st *reqState) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &httpError{Status: http.StatusMethodNotAllowed, Msg: "only GET and HEAD", Allow: "GET, HEAD"}
	}
	q := r.URL.Query()
	wantRunning, wantCompleted := true, true
	if sts := q["status"]; len(sts) > 0 {
		wantRunning, wantCompleted = false, false
		for _, v := range sts {
			switch strings.ToLower(v) {
			case "running":
				wantRunning = true
			case "completed":
				wantCompleted = true
			default:
				return errorf(http.StatusBadRequest, "status must be running or completed")
			}
		}
	}
	limit := -1
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errorf(http.StatusBadRequest, "limit must be a non-negative integer")
		}
		limit = n
	}
	now := s.now()
	out := make([]apiApp, 0, 16)
	for _, v := range s.visibleApps(st) {
		a := toAPIApp(v.app, v.hist, now)
		if c := a.Attempts[0].Completed; c && !wantCompleted || !c && !wantRunning {
			continue
		}
		if limit >= 0 && len(out) >= limit {
			break
		}
		out = append(out, a)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		return nil
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out) // a write error means the client has gone
	return nil
}

func toAPIApp(a *discovery.App, hist *discovery.HistoryRef, now time.Time) apiApp {
	att := apiAttempt{
		AttemptID:       a.AttemptID,
		StartTime:       a.StartTime.UTC().Format(sparkDate),
		SparkUser:       a.User,
		AppSparkVersion: a.SparkVersion,
		StartTimeEpoch:  a.StartTime.UnixMilli(),
	}
	if att.AttemptID == "" && hist != nil && len(hist.Attempts) > 0 {
		att.AttemptID = hist.Attempts[0]
	}
	if a.Live() {
		// As a live driver answers: end is Date(-1), lastUpdated is start.
		end := time.UnixMilli(-1)
		att.EndTime = end.UTC().Format(sparkDate)
		att.EndTimeEpoch = -1
		att.LastUpdated = att.StartTime
		att.LastUpdatedEpoch = att.StartTimeEpoch
		att.Duration = now.Sub(a.StartTime).Milliseconds()
	} else {
		end := a.EndTime
		if end.IsZero() {
			end = a.LastSeen
		}
		if end.IsZero() {
			end = a.StartTime
		}
		att.EndTime = end.UTC().Format(sparkDate)
		att.EndTimeEpoch = end.UnixMilli()
		att.LastUpdated = att.EndTime
		att.LastUpdatedEpoch = att.EndTimeEpoch
		att.Duration = end.Sub(a.StartTime).Milliseconds()
		att.Completed = hist == nil || hist.Completed
	}
	return apiApp{ID: a.ID, Name: a.Name, Attempts: []apiAttempt{att}}
}

// visible is one app the user may view, with the History Server its ACLs
// were judged for (nil: a live driver or an app no History Server lists).
type visible struct {
	app  *discovery.App
	hist *discovery.HistoryRef
}

// visibleApps filters the current snapshot through the Authorizer, in the
// snapshot's order (running first, newest first).
func (s *Server) visibleApps(st *reqState) []visible {
	apps := s.reg.Load().Apps()
	out := make([]visible, 0, len(apps))
	allowed := 0
	for _, a := range apps {
		var hist *discovery.HistoryRef
		if !a.Live() {
			hist = s.historyFor(a, "")
		}
		v := s.authz.Authorize(st.ident, a, hist, View)
		s.auditDecision(st, a, hist, View, v, "listing")
		if v.Allow {
			out = append(out, visible{a, hist})
			allowed++
		}
	}
	if ce := s.audit.Check(zap.InfoLevel, "listing"); ce != nil {
		ce.Write(zap.String("request_id", st.requestID), zap.String("user", st.ident.User),
			zap.Int("allowed", allowed), zap.Int("judged", len(apps)))
	}
	return out
}
