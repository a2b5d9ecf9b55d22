// Package discovery finds the Spark applications the gateway can serve and
// keeps the registry of them: it runs the configured sources (driver logs
// followed across rotation, port probes, standalone masters, static URLs,
// Kubernetes, YARN, History Servers), verifies every candidate against the
// UI's own /api/v1/applications, re-checks live apps, and publishes
// immutable registry snapshots for the request path to read without locks.
//
// It must not serve or authorize requests, and it must not trust what a
// source claims: an app id, owner or ACL comes only from a verified REST
// answer, never from a log line or a cluster label alone.
package discovery
