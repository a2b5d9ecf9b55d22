package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sparkgate/sparkgate/auth"
)

var (
	storeErrorsDesc = prometheus.NewDesc("sparkgate_session_store_errors_total",
		"Failed operations on the shared session store (auth.session.store redis), by op: check, revoke, lock, renewed, claim, ping.",
		[]string{"op"}, nil)
	storeUpDesc = prometheus.NewDesc("sparkgate_session_store_up",
		"1 while the shared session store answers; 0 from a failed operation until a probe answers again.",
		nil, nil)
	storeUncheckedDesc = prometheus.NewDesc("sparkgate_session_store_unchecked_total",
		"Requests whose session was accepted without the shared revocation check because the store was down (fail open).",
		nil, nil)
	storePendingDesc = prometheus.NewDesc("sparkgate_session_store_pending_revocations",
		"Sign-outs taken while the store was down, not yet written to it.",
		nil, nil)
)

// storeCollector reads the shared session store's health at each scrape.
type storeCollector struct{ a *auth.Authenticator }

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- storeErrorsDesc
	ch <- storeUpDesc
	ch <- storeUncheckedDesc
	ch <- storePendingDesc
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	st, ok := c.a.StoreStats()
	if !ok {
		return
	}
	for _, op := range auth.StoreOps {
		ch <- prometheus.MustNewConstMetric(storeErrorsDesc, prometheus.CounterValue, float64(st.Errors[op]), op)
	}
	up := 0.0
	if st.Up {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(storeUpDesc, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(storeUncheckedDesc, prometheus.CounterValue, float64(st.Unchecked))
	ch <- prometheus.MustNewConstMetric(storePendingDesc, prometheus.GaugeValue, float64(st.Pending))
}
