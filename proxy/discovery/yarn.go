package discovery

import (
	"context"
	"fmt"
	"net/url"
)

// yarnSource lists RUNNING apps of a ResourceManager. The candidate is the
// app's tracking URL, which is the RM web proxy (/proxy/<appId>/): the
// driver's AmIpFilter redirects anyone else to it. The RM's application
// name and queue go onto the app (App.YARNName, App.YARNQueue); the user
// it admitted the app as is the one the driver must report.
type yarnSource struct {
	base *url.URL
	c    *client
}

func (y *yarnSource) name() string { return "yarn:" + y.base.String() }

func (y *yarnSource) candidates(ctx context.Context) ([]candidate, error) {
	var resp struct {
		Apps *struct {
			App []struct {
				ID          string `json:"id"`
				User        string `json:"user"`
				Name        string `json:"name"`
				Queue       string `json:"queue"`
				State       string `json:"state"`
				TrackingUI  string `json:"trackingUI"`
				TrackingURL string `json:"trackingUrl"`
			} `json:"app"`
		} `json:"apps"`
	}
	u := *y.base
	if err := y.c.getListJSON(ctx, &u, "ws/v1/cluster/apps?states=RUNNING", &resp); err != nil {
		return nil, fmt.Errorf("reading resource manager %s: %w", y.base.Redacted(), err)
	}
	if resp.Apps == nil { // {"apps":null} when nothing runs
		return nil, nil
	}
	var out []candidate
	for _, a := range resp.Apps.App {
		if a.State != "RUNNING" || a.TrackingUI != "ApplicationMaster" || a.TrackingURL == "" {
			continue
		}
		ui, err := parseRootURL(a.TrackingURL)
		if err != nil {
			continue
		}
		out = append(out, candidate{url: ui, source: y.name(), yarn: true, appID: a.ID, yarnName: a.Name, yarnQueue: a.Queue, yarnUser: a.User})
	}
	return out, nil
}
